package provider

import (
	"context"
	"fmt"
	"time"

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
	// renderAt, when set, gives the function an optional RFC 3339 timestamp argument that
	// stamps the rendering (OpenMetrics samples for a backfill).
	renderAt func(*results.Document, time.Time) string
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
	if f.renderAt != nil {
		resp.Definition.VariadicParameter = function.StringParameter{
			Name: "timestamp",
			MarkdownDescription: "Optional, at most one: an RFC 3339 time (for example `\"2026-12-03T10:00:00Z\"`) " +
				"every sample is stamped with, in OpenMetrics' seconds, so the result can be backfilled into " +
				"Prometheus at the time it was measured (`promtool tsdb create-blocks-from openmetrics`).",
		}
	}
}

func (f *reportFunction) Run(ctx context.Context, req function.RunRequest, resp *function.RunResponse) {
	var document string
	var stamps []string
	if f.renderAt != nil {
		resp.Error = function.ConcatFuncErrors(req.Arguments.Get(ctx, &document, &stamps))
	} else {
		resp.Error = function.ConcatFuncErrors(req.Arguments.Get(ctx, &document))
	}
	if resp.Error != nil {
		return
	}
	var at time.Time
	switch len(stamps) {
	case 0:
	case 1:
		var err error
		if at, err = time.Parse(time.RFC3339, stamps[0]); err != nil {
			resp.Error = function.NewArgumentFuncError(1, fmt.Sprintf("The timestamp argument %q is not an RFC 3339 time such as \"2026-12-03T10:00:00Z\": %v", stamps[0], err))
			return
		}
	default:
		resp.Error = function.NewArgumentFuncError(2, fmt.Sprintf("At most one timestamp argument, got %d", len(stamps)))
		return
	}
	doc, err := results.Parse([]byte(document))
	if err != nil {
		resp.Error = function.NewArgumentFuncError(0, "The document argument is not a schema v1 results document: "+err.Error())
		return
	}
	out := ""
	if len(stamps) == 1 {
		out = f.renderAt(doc, at)
	} else {
		out = f.render(doc)
	}
	resp.Error = function.ConcatFuncErrors(resp.Result.Set(ctx, out))
}
