package runner

import (
	"archive/tar"
	"bufio"
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"time"

	"github.com/llmserve/terraform-provider-llmserve/internal/capacity"
)

// The runner's HTTP port in a Kubernetes Job's pod, and the files it serves there. The
// provider reads them through the API server's pod proxy (or the pod network): nothing but
// the provider's own credentials is needed, and the runner holds none.
const (
	ServePort    = 9400
	eventsName   = "events.jsonl"
	eventsPath   = "/events"  // ?offset=N: the events from byte N, whole lines only
	resultPath   = "/result"  // the Result once the run ended; 404 before
	journalPath  = "/journal" // the run's journal
	recordsPath  = "/records" // a tar of the records directory
	maxEventsGet = 1 << 20
)

// Serve is the runner mode of a Kubernetes Job (`terraform-provider-llmserve runner serve
// --listen :9400 --dir /llmserve --spec /llmserve-spec/spec.json`): Main's run, with its
// events also appended to DIR/events.jsonl, and an HTTP server that serves the events, the
// Result and the records. A runner that starts again in the same pod (the container
// restarted, its emptyDir kept) resumes from the journal in DIR; a first start copies the
// seed journal beside the spec (`journal.jsonl`) there. Once the run has ended it keeps
// serving its result until it is stopped (the provider deletes the Job once it has read it).
func Serve(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fl := flag.NewFlagSet("runner serve", flag.ContinueOnError)
	fl.SetOutput(stderr)
	listen := fl.String("listen", ":"+strconv.Itoa(ServePort), "address the runner serves its events and result on")
	dir := fl.String("dir", Dir, "the runner's own writable directory (journal, events, result, records)")
	specPath := fl.String("spec", "/llmserve-spec/spec.json", "the run spec (a Secret's file)")
	indexFlag := fl.Int("index", -1, "the pod's index in its fleet (default: $"+IndexEnv+", else 0)")
	if err := fl.Parse(args); err != nil {
		return ExitBadSpec
	}
	spec, err := readSpec(*specPath)
	if err != nil {
		fmt.Fprintf(stderr, "llmserve runner: %v\n", err)
		return ExitBadSpec
	}
	if err := os.MkdirAll(*dir, 0o700); err != nil {
		fmt.Fprintf(stderr, "llmserve runner: %v\n", err)
		return ExitBadSpec
	}
	if spec.Config.RecordsDirectory != "" {
		spec.Config.RecordsDirectory = filepath.Join(*dir, "records")
	}
	journal := filepath.Join(*dir, journalName)
	if _, err := os.Stat(journal); errors.Is(err, fs.ErrNotExist) {
		if seed, err := os.ReadFile(filepath.Join(filepath.Dir(*specPath), "journal.jsonl")); err == nil && len(seed) > 0 {
			if err := os.WriteFile(journal, seed, 0o600); err != nil { //nolint:gosec // G703: the runner's own directory, from the Job's arguments
				fmt.Fprintf(stderr, "llmserve runner: seeding the journal: %v\n", err)
			}
		}
	}
	events, err := os.OpenFile(filepath.Join(*dir, eventsName), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		fmt.Fprintf(stderr, "llmserve runner: %v\n", err)
		return ExitBadSpec
	}
	defer events.Close()
	ln, err := net.Listen("tcp", *listen)
	if err != nil {
		fmt.Fprintf(stderr, "llmserve runner: %v\n", err)
		return ExitBadSpec
	}
	index, err := podIndex(*indexFlag)
	if err != nil {
		fmt.Fprintf(stderr, "llmserve runner: %v\n", err)
		return ExitBadSpec
	}
	mux := serveMux(*dir)
	if pods := spec.Config.Pods; pods > 1 {
		if index >= pods {
			fmt.Fprintf(stderr, "llmserve runner: pod %d of a fleet of %d\n", index, pods)
			return ExitBadSpec
		}
		if index > 0 {
			// A worker: it sends the shares pod 0 hands it and measures nothing of its own.
			w := capacity.NewWorker(spec.Config)
			defer w.Close()
			workerMux(mux, w, spec.FleetToken)
			srv := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
			go func() { _ = srv.Serve(ln) }()
			<-ctx.Done()
			shut, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
			defer cancel()
			_ = srv.Shutdown(shut)
			return ExitFinished
		}
		f := newHTTPFleet(*dir, spec.FleetToken, pods, nil)
		coordinatorMux(mux, f, spec.FleetToken)
		spec.Config.Fleet = f
	}
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = srv.Serve(ln) }()
	defer func() {
		shut, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
		defer cancel()
		_ = srv.Shutdown(shut)
	}()

	// A result already there: this runner finished before and was restarted; serve it.
	if _, err := os.Stat(filepath.Join(*dir, resultName)); err != nil {
		// Main's run, in this directory, its events written to the file as well.
		measure(ctx, spec, *dir, io.MultiWriter(stdout, &lineSyncWriter{f: events}), stderr)
	}
	<-ctx.Done()
	return ExitFinished
}

// podIndex is this pod's place in its Indexed Job (IndexEnv): 0, the pod that runs the
// search, when the Job is not indexed.
func podIndex(flagged int) (int, error) {
	if flagged >= 0 {
		return flagged, nil
	}
	v := os.Getenv(IndexEnv)
	if v == "" {
		return 0, nil
	}
	i, err := strconv.Atoi(v)
	if err != nil || i < 0 {
		return 0, fmt.Errorf("%s=%q is not a pod index", IndexEnv, v)
	}
	return i, nil
}

// lineSyncWriter appends to the events file (one Write per event line).
type lineSyncWriter struct {
	mu sync.Mutex
	f  *os.File
}

func (w *lineSyncWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.f.Write(p)
}

func serveMux(dir string) *http.ServeMux {
	mux := http.NewServeMux()
	mux.HandleFunc("GET "+eventsPath, func(w http.ResponseWriter, r *http.Request) {
		offset, _ := strconv.ParseInt(r.URL.Query().Get("offset"), 10, 64)
		f, err := os.Open(filepath.Join(dir, eventsName))
		if err != nil {
			http.Error(w, err.Error(), http.StatusInternalServerError)
			return
		}
		defer f.Close()
		buf := make([]byte, maxEventsGet)
		n, err := f.ReadAt(buf, max(offset, 0))
		if err != nil && !errors.Is(err, io.EOF) {
			http.Error(w, err.Error(), http.StatusInternalServerError)
			return
		}
		// Whole lines only: the next request starts where this one's last line ended.
		if i := bytes.LastIndexByte(buf[:n], '\n'); i >= 0 {
			n = i + 1
		} else {
			n = 0
		}
		w.Header().Set("Content-Type", "application/x-ndjson")
		_, _ = w.Write(buf[:n])
	})
	mux.HandleFunc("GET "+resultPath, func(w http.ResponseWriter, r *http.Request) {
		raw, err := os.ReadFile(filepath.Join(dir, resultName))
		if err != nil {
			http.Error(w, "the run has not ended", http.StatusNotFound)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write(raw)
	})
	mux.HandleFunc("GET "+journalPath, func(w http.ResponseWriter, r *http.Request) {
		raw, err := os.ReadFile(filepath.Join(dir, journalName))
		if err != nil {
			http.Error(w, "no journal", http.StatusNotFound)
			return
		}
		_, _ = w.Write(raw)
	})
	mux.HandleFunc("GET "+recordsPath, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/x-tar")
		_ = tarDir(w, filepath.Join(dir, "records"))
	})
	return mux
}

// tarDir writes the regular files under root as a tar named records/<relative path>, the
// shape the Docker Engine's copy of the same directory has; read through an os.Root, so a
// link never leads out of it.
func tarDir(w io.Writer, root string) error {
	r, err := os.OpenRoot(root)
	if errors.Is(err, fs.ErrNotExist) {
		return nil // no trial was recorded
	}
	if err != nil {
		return err
	}
	defer r.Close()
	fsys := r.FS()
	bw := bufio.NewWriter(w)
	tw := tar.NewWriter(bw)
	err = fs.WalkDir(fsys, ".", func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if !d.Type().IsRegular() {
			return nil
		}
		raw, err := fs.ReadFile(fsys, p)
		if err != nil {
			return err
		}
		if err := tw.WriteHeader(&tar.Header{Name: "records/" + p, Mode: 0o644, Size: int64(len(raw)), Typeflag: tar.TypeReg}); err != nil {
			return err
		}
		_, err = tw.Write(raw)
		return err
	})
	if cerr := tw.Close(); err == nil {
		err = cerr
	}
	if ferr := bw.Flush(); err == nil {
		err = ferr
	}
	return err
}
