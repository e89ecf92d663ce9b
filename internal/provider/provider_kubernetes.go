package provider

import (
	"context"

	"github.com/hashicorp/terraform-plugin-framework/diag"
	"github.com/hashicorp/terraform-plugin-framework/path"
	"github.com/hashicorp/terraform-plugin-framework/provider"
	"github.com/hashicorp/terraform-plugin-framework/provider/schema"
	"github.com/hashicorp/terraform-plugin-framework/schema/validator"
	"github.com/hashicorp/terraform-plugin-framework/types"

	"github.com/llmserve/terraform-provider-llmserve/internal/deploy/kubernetes"
)

// kubernetesProviderBlock is the cluster llmserve_inference_deployment runs on, in the
// Kubernetes provider's conventions. Nothing is read or contacted until a resource needs it.
func kubernetesProviderBlock() schema.Block {
	printable, pem := []validator.String{printableValidator{}}, []validator.String{pemTextValidator{}}
	return schema.SingleNestedBlock{
		MarkdownDescription: "Kubernetes cluster for `llmserve_inference_deployment`, in the conventions of the Kubernetes provider: " +
			"a kubeconfig (`config_path`, else `KUBECONFIG`, else `~/.kube/config`; `config_context` picks a context) or `host` with `token` or " +
			"`client_certificate`/`client_key` and `cluster_ca_certificate`. The kubeconfig is read and the API server contacted only when a resource needs them.",
		Attributes: map[string]schema.Attribute{
			"config_path":    schema.StringAttribute{Optional: true, Validators: printable, MarkdownDescription: "Path of a kubeconfig file (`~` expands). Falls back to `KUBECONFIG`, then `~/.kube/config`. Ignored when `host` is set. " + fileRule(kubernetes.KubeconfigFile)},
			"config_context": schema.StringAttribute{Optional: true, Validators: printable, MarkdownDescription: "Context of the kubeconfig to use; its current context when omitted."},
			"host":           schema.StringAttribute{Optional: true, Validators: printable, MarkdownDescription: "API server URL, e.g. `https://203.0.113.10:6443`. When set, no kubeconfig is read."},
			"token":          schema.StringAttribute{Optional: true, Validators: printable, Sensitive: true, MarkdownDescription: "Bearer token for `host`."},
			"client_certificate": schema.StringAttribute{Optional: true, Validators: pem,
				MarkdownDescription: "PEM client certificate for `host`, with `client_key`."},
			"client_key": schema.StringAttribute{Optional: true, Validators: pem, Sensitive: true,
				MarkdownDescription: "PEM private key of `client_certificate`."},
			"cluster_ca_certificate": schema.StringAttribute{Optional: true, Validators: pem,
				MarkdownDescription: "PEM CA certificate that signed the API server's certificate."},
			"insecure": schema.BoolAttribute{Optional: true,
				MarkdownDescription: "Skip verifying the API server's certificate. For throwaway test clusters only."},
		},
	}
}

type kubernetesProviderModel struct {
	ConfigPath           types.String `tfsdk:"config_path"`
	ConfigContext        types.String `tfsdk:"config_context"`
	Host                 types.String `tfsdk:"host"`
	Token                types.String `tfsdk:"token"`
	ClientCertificate    types.String `tfsdk:"client_certificate"`
	ClientKey            types.String `tfsdk:"client_key"`
	ClusterCACertificate types.String `tfsdk:"cluster_ca_certificate"`
	Insecure             types.Bool   `tfsdk:"insecure"`
}

func kubernetesConfig(ctx context.Context, req provider.ConfigureRequest) (kubernetes.Config, diag.Diagnostics) {
	var mp *kubernetesProviderModel // nil without a kubernetes block: kubeconfig defaults apply
	diags := req.Config.GetAttribute(ctx, path.Root("kubernetes"), &mp)
	if diags.HasError() {
		return kubernetes.Config{}, diags
	}
	var m kubernetesProviderModel
	if mp != nil {
		m = *mp
	}
	var unknown []string
	str := func(name string, v types.String) string {
		if v.IsUnknown() {
			unknown = append(unknown, "kubernetes."+name)
		}
		return v.ValueString()
	}
	cfg := kubernetes.Config{
		ConfigPath:           str("config_path", m.ConfigPath),
		ConfigContext:        str("config_context", m.ConfigContext),
		Host:                 str("host", m.Host),
		Token:                str("token", m.Token),
		ClientCertificate:    str("client_certificate", m.ClientCertificate),
		ClientKey:            str("client_key", m.ClientKey),
		ClusterCACertificate: str("cluster_ca_certificate", m.ClusterCACertificate),
		Insecure:             m.Insecure.ValueBool(),
	}
	cfg.Unknown = unknown
	return cfg, diags
}
