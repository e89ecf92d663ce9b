package provider

import (
	"context"
	"fmt"
	"time"

	"github.com/hashicorp/terraform-plugin-framework/diag"
	"github.com/hashicorp/terraform-plugin-framework/path"
	"github.com/hashicorp/terraform-plugin-framework/provider"
	"github.com/hashicorp/terraform-plugin-framework/provider/schema"
	"github.com/hashicorp/terraform-plugin-framework/schema/validator"
	"github.com/hashicorp/terraform-plugin-framework/tfsdk"
	"github.com/hashicorp/terraform-plugin-framework/types"

	"github.com/llmserve/terraform-provider-llmserve/internal/deploy"
	"github.com/llmserve/terraform-provider-llmserve/internal/deploy/docker"
	"github.com/llmserve/terraform-provider-llmserve/internal/problem"
)

// planEngineWait bounds what a plan asks a Docker Engine (whether the runner or relay image
// can be built there): an engine that does not answer within it is left to the apply, whose
// every call has its own bound (docker.DefaultCallTimeout). deploy.CallTimeoutEnv replaces it.
const planEngineWait = 30 * time.Second

// dockerCallBounds says, for a resource's page, how long each wait on a Docker Engine may
// take before the apply fails saying which engine did not answer and what it was doing.
func dockerCallBounds() string {
	return fmt.Sprintf("Every wait on the Docker Engine has a bound of its own: %s for a call the engine answers at once (inspect, list, create, start, "+
		"a file copied in; a stop adds its grace period, an upload a second per MiB) and, for a stream (an image pull or build, a file copied out), %s without a byte; "+
		"a plan asks the engine for at most %s and leaves an engine that does not answer then to the apply. An engine that accepts connections and does not answer "+
		"fails the apply within its bound, naming the engine and what was being done, instead of holding it until `timeouts.create`. "+
		"The environment variable `%s` (a Go duration, such as `10m`) replaces every such bound, on Kubernetes too.",
		shortDuration(docker.DefaultCallTimeout), shortDuration(docker.DefaultCallTimeout), shortDuration(planEngineWait), deploy.CallTimeoutEnv)
}

// dockerProviderAttributes is the provider's Docker Engine connection. Every attribute is
// optional: the defaults and the DOCKER_* environment reach the local engine.
func dockerProviderAttributes() map[string]schema.Attribute {
	return map[string]schema.Attribute{
		"docker_host": schema.StringAttribute{
			Optional:            true,
			Validators:          []validator.String{printableValidator{}},
			MarkdownDescription: "Docker Engine that runs `llmserve_inference_server` containers: `unix:///var/run/docker.sock` (default), `tcp://host:2376` (TLS, always verified) or `ssh://user@host[:port]`. Falls back to `DOCKER_HOST`. The engine is contacted only when a resource needs it.",
		},
		"ca_pem": schema.StringAttribute{
			Optional:            true,
			Validators:          []validator.String{pemTextValidator{}},
			MarkdownDescription: "PEM certificate of the CA that signed the engine's TLS certificate (`tcp://`). With `cert_pem`/`key_pem` it replaces `cert_path`.",
		},
		"cert_pem": schema.StringAttribute{
			Optional:            true,
			Validators:          []validator.String{pemTextValidator{}},
			MarkdownDescription: "PEM client certificate for a `tcp://` engine running with `--tlsverify`.",
		},
		"key_pem": schema.StringAttribute{
			Optional:            true,
			Validators:          []validator.String{pemTextValidator{}},
			Sensitive:           true,
			MarkdownDescription: "PEM private key of `cert_pem`.",
		},
		"cert_path": schema.StringAttribute{
			Optional:            true,
			Validators:          []validator.String{printableValidator{}},
			MarkdownDescription: "Directory holding `ca.pem`, `cert.pem` and `key.pem`. Falls back to `DOCKER_CERT_PATH`. `DOCKER_TLS_VERIFY=1` makes TLS mandatory for `tcp://`. " + fileRule(docker.PEMFile),
		},
		"ssh_private_key": schema.StringAttribute{
			Optional:            true,
			Validators:          []validator.String{pemTextValidator{}},
			Sensitive:           true,
			MarkdownDescription: "Unencrypted private key (PEM or OpenSSH format) for an `ssh://` engine. The connection forwards to the engine's socket; the remote host needs sshd, not the docker CLI.",
		},
		"ssh_known_hosts_file": schema.StringAttribute{
			Optional:            true,
			Validators:          []validator.String{printableValidator{}},
			MarkdownDescription: "known_hosts file that must hold the `ssh://` host's key (default `~/.ssh/known_hosts`). Host keys are always checked. " + fileRule(docker.KnownHostsFile),
		},
		"ssh_socket_path": schema.StringAttribute{
			Optional:            true,
			Validators:          []validator.String{printableValidator{}},
			MarkdownDescription: "Path of the engine's socket on the `ssh://` host (default `/var/run/docker.sock`).",
		},
	}
}

// dockerSettings reads the connection attributes one by one, so attributes other parts of
// the provider add do not need to be known here, and names those not known yet.
func dockerSettings(ctx context.Context, config tfsdk.Config, diags *diag.Diagnostics) (docker.Config, []string) {
	var unknown []string
	get := func(name string) string {
		var v types.String
		diags.Append(config.GetAttribute(ctx, path.Root(name), &v)...)
		if v.IsUnknown() {
			unknown = append(unknown, name)
		}
		return v.ValueString()
	}
	return docker.Config{
		Host:              get("docker_host"),
		CAPEM:             get("ca_pem"),
		CertPEM:           get("cert_pem"),
		KeyPEM:            get("key_pem"),
		CertPath:          get("cert_path"),
		SSHPrivateKeyPEM:  get("ssh_private_key"),
		SSHKnownHostsFile: get("ssh_known_hosts_file"),
		SSHSocketPath:     get("ssh_socket_path"),
	}, unknown
}

// dockerConfig is the connection the provider configures, the environment filling what the
// configuration leaves unset.
func dockerConfig(ctx context.Context, req provider.ConfigureRequest) (docker.Config, diag.Diagnostics) {
	var diags diag.Diagnostics
	cfg, unknown := dockerSettings(ctx, req.Config, &diags)
	cfg = docker.ConfigFromEnv(cfg)
	// Terraform may configure the provider before values it depends on exist. That must not
	// fail plans that need no engine, so the error is deferred to the first resource that does.
	cfg.Unknown = unknown
	return cfg, diags
}

// validateDockerConfig checks the connection settings given in the configuration at plan
// time: the docker_host syntax, TLS and ssh material that does not parse, and material the
// chosen scheme would ignore. The scheme comes from DOCKER_HOST when docker_host is unset;
// other environment fallbacks are checked when the engine is first used. Unknown values are
// checked then too.
func validateDockerConfig(ctx context.Context, req provider.ValidateConfigRequest, resp *provider.ValidateConfigResponse) {
	cfg, unknown := dockerSettings(ctx, req.Config, &resp.Diagnostics)
	if len(unknown) > 0 || resp.Diagnostics.HasError() {
		return
	}
	fromEnv := cfg.Host == ""
	if fromEnv {
		cfg.Host = docker.ConfigFromEnv(docker.Config{}).Host
	}
	var problems []problem.Problem
	for _, p := range cfg.Check() {
		if fromEnv {
			if p.Path.String() == "docker_host" {
				// Not the configuration's fault; the engine's first use reports it, naming DOCKER_HOST.
				continue
			}
			p.Detail += " (docker_host is unset, so DOCKER_HOST or the local socket applies.)"
		}
		problems = append(problems, p)
	}
	resp.Diagnostics.Append(problemDiagnostics(problems, dockerProblem, nil, false)...)
}
