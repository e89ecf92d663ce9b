// Command terraform-provider-llmserve serves the llmserve Terraform provider.
package main

import (
	"context"
	"flag"
	"log"
	"os"
	"os/signal"
	"syscall"

	"github.com/hashicorp/terraform-plugin-go/tfprotov6"
	"github.com/hashicorp/terraform-plugin-go/tfprotov6/tf6server"

	"github.com/llmserve/terraform-provider-llmserve/internal/provider"
	"github.com/llmserve/terraform-provider-llmserve/internal/runner"
)

// version is set by the release build (-ldflags "-X main.version=...").
var version = "dev"

func main() {
	// `runner` is the mode a benchmark's runner container starts the binary in.
	if len(os.Args) > 1 && os.Args[1] == "runner" {
		ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
		var code int
		if len(os.Args) > 2 && os.Args[2] == "serve" { // a Kubernetes runner Job's pod
			code = runner.Serve(ctx, os.Args[3:], os.Stdout, os.Stderr)
		} else {
			code = runner.Main(ctx, os.Args[2:], os.Stdout, os.Stderr)
		}
		stop()
		os.Exit(code)
	}
	var debug bool
	flag.BoolVar(&debug, "debug", false, "run the provider with support for debuggers like delve")
	flag.Parse()

	server, err := provider.ProtocolServer(version)()
	if err != nil {
		log.Fatal(err.Error())
	}
	var opts []tf6server.ServeOpt
	if debug {
		opts = append(opts, tf6server.WithManagedDebug())
	}
	err = tf6server.Serve("registry.terraform.io/llmserve/llmserve", func() tfprotov6.ProviderServer { return server }, opts...)
	if err != nil {
		log.Fatal(err.Error())
	}
}
