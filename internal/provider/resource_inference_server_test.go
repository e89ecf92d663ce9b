package provider

import (
	"context"
	"fmt"
	"io/fs"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/docker/docker/api/types/container"
	"github.com/hashicorp/terraform-plugin-testing/helper/resource"
	"github.com/hashicorp/terraform-plugin-testing/knownvalue"
	"github.com/hashicorp/terraform-plugin-testing/plancheck"
	"github.com/hashicorp/terraform-plugin-testing/statecheck"
	"github.com/hashicorp/terraform-plugin-testing/terraform"
	"github.com/hashicorp/terraform-plugin-testing/tfjsonpath"
	"github.com/hashicorp/terraform-plugin-testing/tfversion"

	"github.com/llmserve/terraform-provider-llmserve/internal/deploy/docker"
	"github.com/llmserve/terraform-provider-llmserve/internal/deploy/enginetest"
)

const (
	accImage     = "llmserve-test-engine:acc"
	accHubToken  = "hf_acc_secret_token_4711"
	accAPIKey    = "sk-acc-secret-key-0815"
	accResource  = "llmserve_inference_server.test"
	accContainer = "llmserve-acc-test"
)

// The test image is shared by the tests of one run and removed with the last of them.
var accImageState struct {
	sync.Mutex
	users int
	dir   string
}

// accEngine returns a backend for the local engine with the test image built on it, and
// sweeps everything the test created when it ends.
func accEngine(t *testing.T) *docker.Backend {
	t.Helper()
	testAccPreCheck(t)
	b, err := docker.NewConnection(docker.ConfigFromEnv(docker.Config{})).Backend()
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	if _, err := b.Client().Ping(ctx); err != nil {
		t.Fatalf("no Docker Engine at DOCKER_HOST or the default socket (start dockerd): %v", err)
	}
	accImageState.Lock()
	defer accImageState.Unlock()
	if accImageState.dir == "" {
		dir, err := os.MkdirTemp("", "llmserve-acc-image")
		if err != nil {
			t.Fatal(err)
		}
		if err := enginetest.BuildBinaries(ctx, dir); err != nil {
			t.Fatal(err)
		}
		accImageState.dir = dir
	}
	if accImageState.users == 0 {
		if err := enginetest.BuildImage(ctx, b.Client(), accImageState.dir, accImage); err != nil {
			t.Fatal(err)
		}
	}
	accImageState.users++
	t.Cleanup(func() {
		accImageState.Lock()
		defer accImageState.Unlock()
		accImageState.users--
		last := accImageState.users == 0
		if err := enginetest.Sweep(context.Background(), b.Client(), last); err != nil {
			t.Error(err)
		}
		if last {
			_ = os.RemoveAll(accImageState.dir)
			accImageState.dir = ""
		}
	})
	return b
}

func testAccInferenceServerConfig(name, extra string) string {
	return fmt.Sprintf(`
resource "llmserve_inference_server" "test" {
  name   = %q
  image  = %q
  engine = "sglang"
  model  = "sim/qwen-test"
  labels = %s
  readiness_timeout = "2m"
%s
}
`, name, accImage, enginetest.HCLLabels(), extra)
}

// testAccCheckGone is CheckDestroy: no container of the test is left on the engine.
func testAccCheckGone(b *docker.Backend, names ...string) resource.TestCheckFunc {
	return func(s *terraform.State) error {
		ids := names
		for _, rs := range s.RootModule().Resources {
			if rs.Type == "llmserve_inference_server" {
				ids = append(ids, rs.Primary.ID)
			}
		}
		for _, id := range ids {
			if _, err := b.Inspect(context.Background(), id); !docker.IsNotFound(err) {
				return fmt.Errorf("container %s still exists after destroy (err %v)", id, err)
			}
		}
		return nil
	}
}

// testAccCheckCompletion sends a real completion to the computed endpoint.
func testAccCheckCompletion(model, apiKey string) resource.TestCheckFunc {
	return func(s *terraform.State) error {
		ep := s.RootModule().Resources[accResource].Primary.Attributes["endpoint"]
		req, err := http.NewRequest(http.MethodPost, ep+"/v1/completions", strings.NewReader(fmt.Sprintf(`{"model":%q,"prompt":"hello","max_tokens":4}`, model)))
		if err != nil {
			return err
		}
		req.Header.Set("Content-Type", "application/json")
		if apiKey != "" {
			req.Header.Set("Authorization", "Bearer "+apiKey)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			return fmt.Errorf("endpoint %s does not answer: %w", ep, err)
		}
		defer resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			return fmt.Errorf("completion at %s: HTTP %d", ep, resp.StatusCode)
		}
		return nil
	}
}

// testAccCheckNoSecretsOnDisk greps every state file Terraform wrote under dir.
func testAccCheckNoSecretsOnDisk(dir string) resource.TestCheckFunc {
	return func(s *terraform.State) error {
		for k, v := range s.RootModule().Resources[accResource].Primary.Attributes {
			if strings.Contains(v, accHubToken) || strings.Contains(v, accAPIKey) {
				return fmt.Errorf("secret in state attribute %s", k)
			}
		}
		found := 0
		err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
			if err != nil || d.IsDir() || !strings.Contains(d.Name(), ".tfstate") {
				return err
			}
			b, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			found++
			if strings.Contains(string(b), accHubToken) || strings.Contains(string(b), accAPIKey) {
				return fmt.Errorf("write-only secret found in state file %s", p)
			}
			return nil
		})
		if err == nil && found == 0 {
			err = fmt.Errorf("no state file under %s to check", dir)
		}
		return err
	}
}

func TestAccInferenceServer_lifecycle(t *testing.T) {
	b := accEngine(t)
	// Terraform's working directories (and state files) land under TMPDIR; point it at a
	// directory this test can grep.
	tmp := t.TempDir()
	t.Setenv("TMPDIR", tmp)
	secrets := `
  hub_token_wo = "` + accHubToken + `"
  api_key_wo   = "` + accAPIKey + `"`
	var firstID string
	hostPort := enginetest.FreePort(t)
	resource.Test(t, resource.TestCase{
		ProtoV6ProviderFactories: testAccProtoV6ProviderFactories,
		// hub_token_wo and api_key_wo are write-only attributes, which Terraform sends from 1.11
		// on (OpenTofu 1.12 does too); an older CLI skips the test, saying so, rather than fail.
		TerraformVersionChecks: []tfversion.TerraformVersionCheck{tfversion.SkipBelow(tfversion.Version1_11_0)},
		CheckDestroy:           testAccCheckGone(b, accContainer),
		Steps: []resource.TestStep{
			{
				Config: testAccInferenceServerConfig(accContainer, secrets),
				ConfigPlanChecks: resource.ConfigPlanChecks{
					// The plan shows the launch command and the served name; the endpoint waits
					// for the port the engine host picks.
					PreApply: []plancheck.PlanCheck{
						plancheck.ExpectKnownValue(accResource, tfjsonpath.New("command").AtSliceIndex(4), knownvalue.StringExact("sim/qwen-test")),
						plancheck.ExpectKnownValue(accResource, tfjsonpath.New("served_model_name"), knownvalue.StringExact("sim/qwen-test")),
						plancheck.ExpectUnknownValue(accResource, tfjsonpath.New("endpoint")),
					},
				},
				ConfigStateChecks: []statecheck.StateCheck{
					statecheck.ExpectKnownValue(accResource, tfjsonpath.New("served_model_name"), knownvalue.StringExact("sim/qwen-test")),
					statecheck.ExpectKnownValue(accResource, tfjsonpath.New("running"), knownvalue.Bool(true)),
					statecheck.ExpectKnownValue(accResource, tfjsonpath.New("endpoint"), knownvalue.StringRegexp(regexp.MustCompile(`^http://127\.0\.0\.1:\d+$`))),
					statecheck.ExpectKnownValue(accResource, tfjsonpath.New("image_digest"), knownvalue.StringRegexp(regexp.MustCompile(`^sha256:[0-9a-f]{64}$`))),
					statecheck.ExpectKnownValue(accResource, tfjsonpath.New("port"), knownvalue.Int64Exact(30000)),
					statecheck.ExpectKnownValue(accResource, tfjsonpath.New("command"), knownvalue.ListExact([]knownvalue.Check{
						knownvalue.StringExact("python3"), knownvalue.StringExact("-m"), knownvalue.StringExact("sglang.launch_server"),
						knownvalue.StringExact("--model-path"), knownvalue.StringExact("sim/qwen-test"),
						knownvalue.StringExact("--tp"), knownvalue.StringExact("1"),
						knownvalue.StringExact("--device"), knownvalue.StringExact("cpu"),
						knownvalue.StringExact("--enable-metrics"), knownvalue.StringExact("--enable-cache-report"),
						knownvalue.StringExact("--host"), knownvalue.StringExact("0.0.0.0"),
						knownvalue.StringExact("--port"), knownvalue.StringExact("30000"),
					})),
					statecheck.ExpectKnownValue(accResource, tfjsonpath.New("hub_token_wo"), knownvalue.Null()),
					statecheck.ExpectKnownValue(accResource, tfjsonpath.New("api_key_wo"), knownvalue.Null()),
					statecheck.ExpectKnownValue(accResource, tfjsonpath.New("experiment").AtMapKey("model"), knownvalue.StringExact("sim/qwen-test")),
					statecheck.ExpectKnownValue(accResource, tfjsonpath.New("experiment").AtMapKey("tensor_parallelism"), knownvalue.Int64Exact(1)),
				},
				Check: resource.ComposeTestCheckFunc(
					testAccCheckCompletion("sim/qwen-test", accAPIKey),
					testAccCheckNoSecretsOnDisk(tmp),
					func(s *terraform.State) error {
						firstID = s.RootModule().Resources[accResource].Primary.ID
						return nil
					},
				),
			},
			{
				// Same configuration again: nothing to do (no perpetual diff).
				Config: testAccInferenceServerConfig(accContainer, secrets),
				ConfigPlanChecks: resource.ConfigPlanChecks{
					PreApply: []plancheck.PlanCheck{plancheck.ExpectEmptyPlan()},
				},
			},
			{
				// restart_policy changes in place: same container.
				Config: testAccInferenceServerConfig(accContainer, secrets+"\n  restart_policy = \"on-failure\""),
				ConfigPlanChecks: resource.ConfigPlanChecks{
					PreApply: []plancheck.PlanCheck{plancheck.ExpectResourceAction(accResource, plancheck.ResourceActionUpdate)},
				},
				Check: func(s *terraform.State) error {
					if id := s.RootModule().Resources[accResource].Primary.ID; id != firstID {
						return fmt.Errorf("in-place update replaced the container: %s -> %s", firstID, id)
					}
					return nil
				},
			},
			{
				// A launch setting needs a new container. With a fixed host port the plan
				// already knows the endpoint, and apply must agree with it.
				Config: testAccInferenceServerConfig(accContainer, secrets+fmt.Sprintf("\n  restart_policy = \"on-failure\"\n  served_model_name = \"qwen\"\n  host_port = %d", hostPort)),
				ConfigPlanChecks: resource.ConfigPlanChecks{
					PreApply: []plancheck.PlanCheck{
						plancheck.ExpectResourceAction(accResource, plancheck.ResourceActionReplace),
						plancheck.ExpectKnownValue(accResource, tfjsonpath.New("endpoint"), knownvalue.StringExact(fmt.Sprintf("http://127.0.0.1:%d", hostPort))),
						plancheck.ExpectKnownValue(accResource, tfjsonpath.New("command"), knownvalue.ListExact([]knownvalue.Check{
							knownvalue.StringExact("python3"), knownvalue.StringExact("-m"), knownvalue.StringExact("sglang.launch_server"),
							knownvalue.StringExact("--model-path"), knownvalue.StringExact("sim/qwen-test"),
							knownvalue.StringExact("--served-model-name"), knownvalue.StringExact("qwen"),
							knownvalue.StringExact("--tp"), knownvalue.StringExact("1"),
							knownvalue.StringExact("--device"), knownvalue.StringExact("cpu"),
							knownvalue.StringExact("--enable-metrics"), knownvalue.StringExact("--enable-cache-report"),
							knownvalue.StringExact("--host"), knownvalue.StringExact("0.0.0.0"),
							knownvalue.StringExact("--port"), knownvalue.StringExact("30000"),
						})),
					},
				},
				Check: resource.ComposeTestCheckFunc(
					testAccCheckCompletion("qwen", accAPIKey),
					func(s *terraform.State) error {
						if id := s.RootModule().Resources[accResource].Primary.ID; id == firstID {
							return fmt.Errorf("replace kept container %s", id)
						}
						if _, err := b.Inspect(context.Background(), firstID); !docker.IsNotFound(err) {
							return fmt.Errorf("replaced container %s still exists", firstID)
						}
						return nil
					},
				),
			},
			{
				ResourceName:      accResource,
				ImportState:       true,
				ImportStateId:     accContainer, // by name
				ImportStateVerify: true,
				// The server demands the API key, which is write-only and so unknown to an
				// import: what only the server reports stays empty. The drift test, without a
				// key, verifies those too.
				ImportStateVerifyIgnore: []string{"hub_token_wo", "api_key_wo", "timeouts",
					"server_version", "experiment.context_length", "experiment.physical_token_pool"},
			},
		},
	})
}

func TestAccInferenceServer_drift(t *testing.T) {
	b := accEngine(t)
	name := accContainer + "-drift"
	cfg := testAccInferenceServerConfig(name, `  stop_grace_period_seconds = 1`)
	resource.Test(t, resource.TestCase{
		ProtoV6ProviderFactories: testAccProtoV6ProviderFactories,
		CheckDestroy:             testAccCheckGone(b, name),
		Steps: []resource.TestStep{
			{Config: cfg},
			{
				// Stopped out of band: the plan shows running false -> true and apply restarts it.
				PreConfig: func() {
					if err := b.Stop(context.Background(), name, time.Second); err != nil {
						t.Fatal(err)
					}
				},
				Config: cfg,
				ConfigPlanChecks: resource.ConfigPlanChecks{
					PreApply: []plancheck.PlanCheck{
						plancheck.ExpectResourceAction(accResource, plancheck.ResourceActionUpdate),
						plancheck.ExpectKnownValue(accResource, tfjsonpath.New("running"), knownvalue.Bool(true)),
					},
				},
				ConfigStateChecks: []statecheck.StateCheck{
					statecheck.ExpectKnownValue(accResource, tfjsonpath.New("running"), knownvalue.Bool(true)),
				},
				Check: testAccCheckCompletion("sim/qwen-test", ""),
			},
			{
				// Removed out of band: the next plan creates it.
				PreConfig: func() {
					if err := b.Remove(context.Background(), name, 0); err != nil {
						t.Fatal(err)
					}
				},
				Config: cfg,
				ConfigPlanChecks: resource.ConfigPlanChecks{
					PreApply: []plancheck.PlanCheck{plancheck.ExpectResourceAction(accResource, plancheck.ResourceActionCreate)},
				},
				Check: testAccCheckCompletion("sim/qwen-test", ""),
			},
			{
				// Import by container id.
				ResourceName:            accResource,
				ImportState:             true,
				ImportStateVerify:       true,
				ImportStateVerifyIgnore: []string{"hub_token_wo", "api_key_wo", "timeouts"},
			},
		},
	})
}

func TestAccInferenceServer_exitAtStart(t *testing.T) {
	b := accEngine(t)
	name := accContainer + "-crash"
	resource.Test(t, resource.TestCase{
		ProtoV6ProviderFactories: testAccProtoV6ProviderFactories,
		CheckDestroy:             testAccCheckGone(b, name),
		Steps: []resource.TestStep{{
			Config: testAccInferenceServerConfig(name, `  environment = { SIMENGINE_ARGS = "-startup-delay=30s -exit-after=300ms -exit-code=3" }`),
			// The diagnostic carries the engine's last log line and says the container is gone.
			ExpectError: regexp.MustCompile(`(?s)exited with code 3.*simulated crash.*container\s+this\s+apply\s+created\s+was\s+removed`),
		}},
	})
	if _, err := b.Inspect(context.Background(), name); !docker.IsNotFound(err) {
		t.Errorf("failed create left container %s behind (%v)", name, err)
	}
}

func TestAccInferenceServer_validation(t *testing.T) {
	testAccPreCheck(t)
	tests := []struct {
		name, extra string
		want        *regexp.Regexp
	}{
		{"sglang topk 1 draft tokens", `  speculative = { algorithm = "EAGLE", steps = 7, topk = 1, draft_tokens = 7 }`, regexp.MustCompile(`speculative\.draft_tokens:\s+with\s+topk\s+=\s+1\s+SGLang\s+needs\s+draft_tokens\s+=\s+steps\s+\+\s+1\s+=\s+8`)},
		{"tensor parallel zero", `  tensor_parallel_size = 0`, regexp.MustCompile(`(?s)tensor_parallel_size.*at least 1`)},
		{"port range", `  port = 70000`, regexp.MustCompile(`(?s)port.*between 1 and 65535`)},
		{"created stopped", `  running = false`, regexp.MustCompile(`(?s)A new inference server starts running.*running = false stops an existing server`)},
		{"host port with host networking", `
  network_mode = "host"
  host_port    = 18080`, regexp.MustCompile(`(?s)host_port: does not apply with host networking`)},
		// Intel's runbook: SGLang drafts only top-k 1 on XPU.
		{"xpu speculative top-k 4", `
  accelerator = "xpu"
  speculative = { algorithm = "EAGLE", steps = 3, topk = 4, draft_tokens = 8 }`, regexp.MustCompile(`(?s)speculative\.topk:\s+SGLang\s+on\s+XPU\s+drafts\s+only\s+top-k\s+1`)},
		{"xpu speculative page size 32 on intel_xpu", `
  accelerator = "xpu"
  speculative = { algorithm = "EAGLE", steps = 7, topk = 1, draft_tokens = 8 }
  extra_args  = ["--page-size", "32"]`, regexp.MustCompile(`(?s)extra_args:.*runs\s+with\s+--page-size\s+64`)},
		{"unsupported accelerator", `
  engine = "llamacpp"
  accelerator = "xpu"`, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg := testAccInferenceServerConfig("llmserve-acc-invalid", tt.extra)
			if tt.want == nil {
				cfg = fmt.Sprintf(`
resource "llmserve_inference_server" "test" {
  name        = "llmserve-acc-invalid"
  image       = %q
  engine      = "sglang"
  model       = "org/model"
  accelerator = "vulkan"
}`, accImage)
				tt.want = regexp.MustCompile(`accelerator:\s+engine\s+"sglang"\s+does\s+not\s+run\s+on\s+"vulkan"\s+here;\s+use\s+one\s+of\s+"cpu",\s+"cuda",\s+"xpu"`)
			}
			resource.Test(t, resource.TestCase{
				ProtoV6ProviderFactories: testAccProtoV6ProviderFactories,
				Steps:                    []resource.TestStep{{Config: cfg, PlanOnly: true, ExpectError: tt.want}},
			})
		})
	}
}

// A name another container holds, or a host port another process listens on, is a clash: the
// diagnostic says so (not "did not become ready"), names what is taken and the fix, and
// leaves the other container alone.
func TestAccInferenceServer_clash(t *testing.T) {
	b := accEngine(t)
	name := accContainer + "-clash"
	ctx := context.Background()
	other, err := b.Client().ContainerCreate(ctx, &container.Config{Image: accImage, Cmd: []string{"/simengine"}, Labels: map[string]string{"llmserve.test": "clash"}}, nil, nil, nil, name)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = b.Remove(context.Background(), other.ID, 0) }()
	// A port a process on the host (here: this test) already listens on.
	l, err := net.Listen("tcp", "0.0.0.0:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	port := l.Addr().(*net.TCPAddr).Port
	resource.Test(t, resource.TestCase{
		ProtoV6ProviderFactories: testAccProtoV6ProviderFactories,
		Steps: []resource.TestStep{{
			Config:      testAccInferenceServerConfig(name, ""),
			ExpectError: regexp.MustCompile(`(?s)name or port is taken.*container\s+name\s+"` + name + `"\s+is\s+taken.*choose\s+another\s+name`),
		}, {
			Config:      testAccInferenceServerConfig(name+"-port", fmt.Sprintf("  host_port = %d", port)),
			ExpectError: regexp.MustCompile(`(?s)name or port is taken.*host\s+port\s+is\s+taken.*choose\s+another\s+host_port`),
		}},
	})
	if st, err := b.Inspect(ctx, name); err != nil || st.ID != other.ID {
		t.Errorf("the other container: %+v, %v", st, err)
	}
	if _, err := b.Inspect(ctx, name+"-port"); !docker.IsNotFound(err) {
		t.Errorf("the port clash left container %s-port behind (%v)", name, err)
	}
}
