package provider

import (
	"context"

	"github.com/hashicorp/terraform-plugin-framework/function"

	"github.com/llmserve/terraform-provider-llmserve/internal/results"
)

// reportFunction is a provider function that renders a results document as text. The four
// report_* functions differ only in their names, docs and renderer.
type reportFunction struct {
	name        string
	summary     string
	description string
	render      func(*results.Document) string
}

var _ function.Function = (*reportFunction)(nil)

func (f *reportFunction) Metadata(_ context.Context, _ function.MetadataRequest, resp *function.MetadataResponse) {
	resp.Name = f.name
}

func (f *reportFunction) Definition(_ context.Context, _ function.DefinitionRequest, resp *function.DefinitionResponse) {
	resp.Definition = function.Definition{
		Summary:             f.summary,
		MarkdownDescription: f.description,
		Parameters: []function.Parameter{
			function.StringParameter{
				Name: "document",
				MarkdownDescription: "A schema v1 results document as a JSON string, for example " +
					"`llmserve_capacity_benchmark.example.results_json` or `file(\"results.json\")`.",
			},
		},
		Return: function.StringReturn{},
	}
}

func (f *reportFunction) Run(ctx context.Context, req function.RunRequest, resp *function.RunResponse) {
	var document string
	resp.Error = function.ConcatFuncErrors(req.Arguments.Get(ctx, &document))
	if resp.Error != nil {
		return
	}
	doc, err := results.Parse([]byte(document))
	if err != nil {
		resp.Error = function.NewArgumentFuncError(0, "The document argument is not a schema v1 results document: "+err.Error())
		return
	}
	resp.Error = function.ConcatFuncErrors(resp.Result.Set(ctx, f.render(doc)))
}
