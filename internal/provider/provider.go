// Package provider is the Terraform glue: schemas, models and CRUD that translate between
// Terraform values and the domain packages under internal/.
package provider

import (
	"context"

	"github.com/hashicorp/terraform-plugin-framework/datasource"
	"github.com/hashicorp/terraform-plugin-framework/function"
	"github.com/hashicorp/terraform-plugin-framework/provider"
	"github.com/hashicorp/terraform-plugin-framework/provider/schema"
	"github.com/hashicorp/terraform-plugin-framework/resource"

	"github.com/llmserve/terraform-provider-llmserve/internal/deploy"
	"github.com/llmserve/terraform-provider-llmserve/internal/deploy/docker"
	"github.com/llmserve/terraform-provider-llmserve/internal/deploy/kubernetes"
)

var (
	_ provider.Provider                   = (*llmserveProvider)(nil)
	_ provider.ProviderWithFunctions      = (*llmserveProvider)(nil)
	_ provider.ProviderWithValidateConfig = (*llmserveProvider)(nil)
)

type llmserveProvider struct {
	version string
}

// providerData is handed to every resource and data source through Configure.
type providerData struct {
	version string
	// docker builds the Docker Engine backend on first use, so configuring the provider
	// never contacts the engine.
	docker *docker.Connection
	// kubernetes likewise connects to the cluster only when a resource needs it.
	kubernetes *kubernetes.Connection
}

// New returns a constructor for the provider, as providerserver expects.
func New(version string) func() provider.Provider {
	return func() provider.Provider { return &llmserveProvider{version: version} }
}

func (p *llmserveProvider) Metadata(_ context.Context, _ provider.MetadataRequest, resp *provider.MetadataResponse) {
	resp.TypeName = "llmserve"
	resp.Version = p.version
}

func (p *llmserveProvider) Schema(_ context.Context, _ provider.SchemaRequest, resp *provider.SchemaResponse) {
	resp.Schema = schema.Schema{
		MarkdownDescription: "Deploys LLM inference servers and measures their SLO capacity as infrastructure code.",
		Attributes:          dockerProviderAttributes(),
		Blocks:              map[string]schema.Block{"kubernetes": kubernetesProviderBlock()},
	}
}

// ValidateConfig checks the Docker Engine connection settings at plan time.
func (p *llmserveProvider) ValidateConfig(ctx context.Context, req provider.ValidateConfigRequest, resp *provider.ValidateConfigResponse) {
	validateDockerConfig(ctx, req, resp)
}

func (p *llmserveProvider) Configure(ctx context.Context, req provider.ConfigureRequest, resp *provider.ConfigureResponse) {
	dockerCfg, diags := dockerConfig(ctx, req)
	resp.Diagnostics.Append(diags...)
	if resp.Diagnostics.HasError() {
		return
	}
	kubeCfg, diags := kubernetesConfig(ctx, req)
	resp.Diagnostics.Append(diags...)
	if err := deploy.CheckCallTimeoutEnv(); err != nil {
		resp.Diagnostics.AddError("Invalid "+deploy.CallTimeoutEnv, err.Error())
	}
	if resp.Diagnostics.HasError() {
		return
	}
	data := &providerData{version: p.version, docker: docker.NewConnection(dockerCfg), kubernetes: kubernetes.NewConnection(kubeCfg)}
	resp.ResourceData = data
	resp.DataSourceData = data
}

func (p *llmserveProvider) Resources(_ context.Context) []func() resource.Resource {
	return []func() resource.Resource{
		NewCapacityBenchmarkResource,
		NewInferenceServerResource,
		NewInferenceDeploymentResource,
	}
}

func (p *llmserveProvider) DataSources(_ context.Context) []func() datasource.DataSource {
	return []func() datasource.DataSource{NewCapacityReportDataSource}
}

func (p *llmserveProvider) Functions(_ context.Context) []func() function.Function {
	return []func() function.Function{NewReportMarkdownFunction, NewReportCSVFunction, NewReportOpenMetricsFunction, NewReportSVGFunction, NewCompareFunction, NewReplicasForFunction}
}
