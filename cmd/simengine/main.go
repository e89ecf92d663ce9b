// Command simengine serves the simulated OpenAI-compatible inference engine over HTTP. It is a
// stand-in for SGLang in container and acceptance tests: build it with CGO_ENABLED=0 and it runs
// in a FROM scratch image. The fault flags make it behave like a server that loads slowly or dies.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log"
	"net"
	"net/http"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/llmserve/terraform-provider-llmserve/internal/simengine"
)

func main() {
	os.Exit(run(os.Args[1:]))
}

func run(args []string) int {
	def := simengine.DefaultModel()
	fs := flag.NewFlagSet("simengine", flag.ContinueOnError)
	host := fs.String("host", "0.0.0.0", "address to listen on")
	port := fs.Int("port", 30000, "port to listen on (SGLang's default)")
	model := fs.String("model", "sim-model", "served model name")
	apiKey := fs.String("api-key", os.Getenv("SIMENGINE_API_KEY"), "require this Bearer token (default $SIMENGINE_API_KEY)")
	slots := fs.Int("slots", def.Slots, "max running requests decoded together")
	prefill := fs.Duration("prefill-per-token", def.PrefillPerToken, "prefill cost per prompt token")
	prefillOverhead := fs.Duration("prefill-overhead", def.PrefillOverhead, "fixed cost of one prefill batch")
	decode := fs.Duration("decode-step", def.DecodeStep, "one decode step with a single running request")
	decodePerSeq := fs.Duration("decode-per-seq", def.DecodePerSeq, "extra decode-step cost per running request")
	chunk := fs.Int("chunked-prefill-size", def.MaxPrefillTokens, "max prompt tokens in one prefill batch (0: no cap)")
	noise := fs.Float64("request-noise", def.RequestNoise, "relative spread of per-request prefill cost")
	scale := fs.Float64("time-scale", 1, "wall time per model time (0.01 runs 100x faster)")
	ctxLen := fs.Int("context-length", 32768, "maximum prompt + output tokens")
	chatOverhead := fs.Int("chat-template-tokens", 11, "tokens the chat template adds to a chat prompt (0 or negative: none)")
	startupDelay := fs.Duration("startup-delay", 0, "answer 503 (not ready) for this long after start, like a server loading weights")
	exitAfter := fs.Duration("exit-after", 0, "exit after this long, printing a last log line first (fault injection)")
	exitCode := fs.Int("exit-code", 1, "exit status used by -exit-after")
	logRequests := fs.Bool("log-requests", false, "log one line per finished request")
	protocol := fs.String("protocol", "", "HTTP face of one engine release: sglang-0.4, sglang-0.4-early, sglang, vllm, llamacpp (default: the generic SGLang-like face)")
	version := fs.String("version", "", "version the server reports")
	adminKey := fs.String("admin-api-key", os.Getenv("SIMENGINE_ADMIN_API_KEY"), "guard /flush_cache with this key, as SGLang's --admin-api-key (protocol sglang)")
	devMode := fs.Bool("dev-mode", false, "serve vLLM's development endpoints (/reset_prefix_cache, /server_info), as VLLM_SERVER_DEV_MODE=1")
	noCacheReport := fs.Bool("no-cache-report", false, "leave cached tokens out of usage (SGLang without --enable-cache-report, vLLM without --enable-prompt-tokens-details)")
	outputFault := fs.String("output-fault", "", "answer with broken text, timing and usage unchanged: exclamation (every token \"!\"), empty (no text, tokens counted), same (one text for every prompt) or unk (every token \"<unk>\")")
	noMetrics := fs.Bool("no-metrics", false, "serve no /metrics (SGLang without --enable-metrics, llama.cpp without --metrics)")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		return 2
	}
	logger := log.New(os.Stderr, "simengine: ", log.LstdFlags|log.Lmicroseconds)

	m := def
	m.Slots, m.PrefillPerToken, m.PrefillOverhead = *slots, *prefill, *prefillOverhead
	m.DecodeStep, m.DecodePerSeq, m.RequestNoise, m.MaxPrefillTokens = *decode, *decodePerSeq, *noise, *chunk
	opts := simengine.Options{
		Model: m, ModelName: *model, APIKey: *apiKey, TimeScale: *scale,
		ContextLength: *ctxLen, ChatTemplateTokens: *chatOverhead,
		Protocol: simengine.Protocol(*protocol), Version: *version, AdminAPIKey: *adminKey,
		DevMode: *devMode, NoCacheReport: *noCacheReport, NoMetrics: *noMetrics, OutputFault: simengine.OutputFault(*outputFault),
	}
	if *chatOverhead == 0 {
		opts.ChatTemplateTokens = -1 // the flag's 0 means none; the option's 0 means default
	}
	if *logRequests {
		opts.Logf = logger.Printf
	}
	srv, err := simengine.NewServer(opts)
	if err != nil {
		logger.Printf("invalid configuration: %v", err)
		return 2
	}

	addr := net.JoinHostPort(*host, fmt.Sprint(*port))
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		logger.Printf("listen on %s: %v", addr, err)
		return 1
	}
	logger.Printf("serving model %q on %s (protocol=%q slots=%d prefill=%s/token decode=%s+%s/seq time-scale=%g)",
		*model, ln.Addr(), *protocol, m.Slots, m.PrefillPerToken, m.DecodeStep, m.DecodePerSeq, *scale)

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()

	if *startupDelay > 0 {
		srv.SetReady(false)
		logger.Printf("loading model weights (ready in %s)", *startupDelay)
		time.AfterFunc(*startupDelay, func() {
			srv.SetReady(true)
			logger.Printf("The server is fired up and ready to roll!")
		})
	} else {
		logger.Printf("The server is fired up and ready to roll!")
	}

	httpSrv := &http.Server{Handler: srv, ReadHeaderTimeout: 10 * time.Second}
	serveErr := make(chan error, 1)
	go func() { serveErr <- httpSrv.Serve(ln) }()

	var exitTimer <-chan time.Time
	if *exitAfter > 0 {
		exitTimer = time.After(*exitAfter)
	}
	select {
	case err := <-serveErr:
		logger.Printf("serve: %v", err)
		return 1
	case <-exitTimer:
		logger.Printf("fatal: simulated crash after %s (exit code %d)", *exitAfter, *exitCode)
		return *exitCode
	case <-ctx.Done():
		logger.Printf("shutting down")
		shutdownCtx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		if err := httpSrv.Shutdown(shutdownCtx); err != nil {
			logger.Printf("shutdown: %v", err)
			return 1
		}
		return 0
	}
}
