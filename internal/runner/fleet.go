package runner

// The pods of a runner Job that spreads every trial over several (runner.kubernetes.pods):
// pod 0 runs the search (capacity.Resume) and sends each trial's shares to the others over
// the pod network (httpPeer); the others are workers (capacity.Worker) serving /fleet/*. The
// provider, which alone can list the Job's pods (the pods hold no API credentials), posts
// pod 0 their addresses (peersPath) whenever it follows the run; pod 0 keeps them in its
// directory, so a restarted runner process finds them again without the provider.

import (
	"bytes"
	"context"
	"crypto/subtle"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/netip"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/llmserve/terraform-provider-llmserve/internal/capacity"
)

// The fleet's paths on the runner's HTTP port, and the header every request of them carries.
const (
	peersPath       = "/fleet/peers"           // POST to pod 0: {"peers": ["ip:port", …]}, pod 1 first
	readyPath       = "/fleet/ready"           // GET on a worker: 200 once it serves
	sharePath       = "/fleet/share"           // POST ?id=: a capacity.Share; answers {"now": …}
	releasePath     = "/fleet/release"         // POST ?id=&at=<unix ns>
	shareResultPath = "/fleet/result"          // GET ?id=: the capacity.ShareResult; 202 while it runs
	stopPath        = "/fleet/stop"            // POST ?id=
	tokenHeader     = "X-Llmserve-Fleet-Token" //nolint:gosec // G101: a header name, not a credential
	peersName       = "peers.json"
	// IndexEnv is the pod's completion index, which the Job controller gives each pod of an
	// Indexed Job (and the pod template passes on from its annotation).
	IndexEnv = "JOB_COMPLETION_INDEX"
)

// PeerWait is how long pod 0 waits for every other pod of the fleet to answer before a
// trial (a pod scheduled late, pulling its image, restarted, or replaced and not yet
// announced by the provider); past it the run stops with its trials kept, and the next apply
// resumes from them.
var PeerWait = 3 * time.Minute

// resultPoll bounds one wait for a share's result: a pod that is gone fails the next poll
// instead of holding a connection open for minutes.
const resultPoll = 20 * time.Second

// httpFleet is pod 0's view of the other pods: their addresses as the provider last posted
// them (and persisted in dir), each reached as an httpPeer.
type httpFleet struct {
	dir, token string
	pods       int
	client     *http.Client
	say        func(string)

	mu      sync.Mutex
	addrs   []string
	changed chan struct{}
}

func newHTTPFleet(dir, token string, pods int, say func(string)) *httpFleet {
	f := &httpFleet{dir: dir, token: token, pods: pods, say: say, changed: make(chan struct{}),
		client: &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 4, IdleConnTimeout: time.Minute}}}
	if raw, err := os.ReadFile(filepath.Join(dir, peersName)); err == nil {
		var addrs []string
		if json.Unmarshal(raw, &addrs) == nil && len(addrs) == pods-1 {
			f.addrs = addrs
		}
	}
	return f
}

// setPeers takes the other pods' addresses, pod 1 first.
func (f *httpFleet) setPeers(addrs []string) error {
	if len(addrs) != f.pods-1 {
		return fmt.Errorf("%d addresses for the %d other pods", len(addrs), f.pods-1)
	}
	for _, a := range addrs {
		// Pod IPs only: a host name here could send the trial's shares anywhere it resolves.
		if _, err := netip.ParseAddrPort(a); err != nil {
			return fmt.Errorf("address %q is no pod IP and port: %w", a, err)
		}
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if slices.Equal(f.addrs, addrs) {
		return nil
	}
	f.addrs = slices.Clone(addrs)
	raw, _ := json.Marshal(addrs)
	_ = os.WriteFile(filepath.Join(f.dir, peersName), raw, 0o600) // a restarted process reads them; without, it waits for the provider
	close(f.changed)
	f.changed = make(chan struct{})
	return nil
}

// Peers returns the other pods once every one answers, waiting up to PeerWait.
func (f *httpFleet) Peers(ctx context.Context) ([]capacity.Peer, error) {
	deadline := time.Now().Add(PeerWait)
	said := false
	for {
		f.mu.Lock()
		addrs, changed := slices.Clone(f.addrs), f.changed
		f.mu.Unlock()
		missing := f.missing(ctx, addrs)
		if len(missing) == 0 {
			peers := make([]capacity.Peer, len(addrs))
			for i, a := range addrs {
				peers[i] = &httpPeer{base: "http://" + a, token: f.token, client: f.client}
			}
			return peers, nil
		}
		if time.Now().After(deadline) {
			return nil, fmt.Errorf("runner pods %s of %d did not answer within %s: a pod that cannot be scheduled or pulled, or one replaced while no apply followed the run "+
				"(the provider tells pod 0 where the others are); the trials so far are kept: apply again to resume", strings.Join(missing, ", "), f.pods, PeerWait)
		}
		if !said && f.say != nil {
			f.say(fmt.Sprintf("%s  waiting for runner pods %s of %d to answer before the next trial", time.Now().UTC().Format("15:04:05"), strings.Join(missing, ", "), f.pods))
			said = true
		}
		t := time.NewTimer(500 * time.Millisecond)
		select {
		case <-ctx.Done():
			t.Stop()
			return nil, ctx.Err()
		case <-changed:
		case <-t.C:
		}
		t.Stop()
	}
}

// missing names the pods that do not answer yet (all when their addresses are unknown).
func (f *httpFleet) missing(ctx context.Context, addrs []string) []string {
	var out []string
	if len(addrs) != f.pods-1 {
		for i := 1; i < f.pods; i++ {
			out = append(out, strconv.Itoa(i))
		}
		return out
	}
	var mu sync.Mutex
	var wg sync.WaitGroup
	for i, a := range addrs {
		wg.Go(func() {
			p := &httpPeer{base: "http://" + a, token: f.token, client: f.client}
			if _, err := p.do(ctx, http.MethodGet, readyPath, nil, nil, nil, 2*time.Second); err != nil {
				mu.Lock()
				out = append(out, strconv.Itoa(i+1))
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	slices.SortFunc(out, func(a, b string) int { x, _ := strconv.Atoi(a); y, _ := strconv.Atoi(b); return x - y })
	return out
}

// httpPeer is another pod of the fleet, reached over the pod network.
type httpPeer struct {
	base, token string
	client      *http.Client
}

// do sends one request within timeout and decodes a 200's JSON body into out (when not
// nil); it returns the status of a 2xx answer, an error for anything else.
func (p *httpPeer) do(ctx context.Context, method, path string, q url.Values, body, out any, timeout time.Duration) (int, error) {
	var rd io.Reader
	if body != nil {
		raw, err := json.Marshal(body)
		if err != nil {
			return 0, err
		}
		rd = bytes.NewReader(raw)
	}
	u := p.base + path
	if len(q) > 0 {
		u += "?" + q.Encode()
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, method, u, rd)
	if err != nil {
		return 0, err
	}
	req.Header.Set(tokenHeader, p.token)
	resp, err := p.client.Do(req)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	if resp.StatusCode >= 300 {
		msg, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
		return resp.StatusCode, fmt.Errorf("%s %s: %s: %s", method, path, resp.Status, strings.TrimSpace(string(msg)))
	}
	if out != nil && resp.StatusCode == http.StatusOK {
		if err := json.NewDecoder(io.LimitReader(resp.Body, maxFileBytes)).Decode(out); err != nil {
			return resp.StatusCode, fmt.Errorf("%s %s: the answer does not parse: %w", method, path, err)
		}
	}
	return resp.StatusCode, nil
}

func (p *httpPeer) Prepare(ctx context.Context, id string, s capacity.Share) (time.Time, error) {
	var ready struct {
		Now time.Time `json:"now"`
	}
	_, err := p.do(ctx, http.MethodPost, sharePath, url.Values{"id": {id}}, s, &ready, time.Minute)
	return ready.Now, err
}

func (p *httpPeer) Release(ctx context.Context, id string, at time.Time) error {
	_, err := p.do(ctx, http.MethodPost, releasePath, url.Values{"id": {id}, "at": {strconv.FormatInt(at.UnixNano(), 10)}}, nil, nil, 10*time.Second)
	return err
}

func (p *httpPeer) Result(ctx context.Context, id string) (capacity.ShareResult, error) {
	for {
		var r capacity.ShareResult
		code, err := p.do(ctx, http.MethodGet, shareResultPath, url.Values{"id": {id}}, nil, &r, resultPoll+10*time.Second)
		if err != nil || code != http.StatusAccepted {
			return r, err
		}
	}
}

func (p *httpPeer) Stop(ctx context.Context, id string) error {
	_, err := p.do(ctx, http.MethodPost, stopPath, url.Values{"id": {id}}, nil, nil, 10*time.Second)
	return err
}

// authorized says whether r carries the fleet's token.
func authorized(w http.ResponseWriter, r *http.Request, token string) bool {
	if token == "" || subtle.ConstantTimeCompare([]byte(r.Header.Get(tokenHeader)), []byte(token)) != 1 {
		http.Error(w, "not a request of this runner's fleet", http.StatusForbidden)
		return false
	}
	return true
}

// workerMux serves a worker pod's share of every trial.
func workerMux(mux *http.ServeMux, w *capacity.Worker, token string) {
	status := func(rw http.ResponseWriter, err error) {
		code := http.StatusInternalServerError
		if errors.Is(err, capacity.ErrUnknownShare) {
			code = http.StatusNotFound
		}
		http.Error(rw, err.Error(), code)
	}
	mux.HandleFunc("GET "+readyPath, func(rw http.ResponseWriter, r *http.Request) {
		if authorized(rw, r, token) {
			rw.WriteHeader(http.StatusOK)
		}
	})
	mux.HandleFunc("POST "+sharePath, func(rw http.ResponseWriter, r *http.Request) {
		if !authorized(rw, r, token) {
			return
		}
		var s capacity.Share
		if err := json.NewDecoder(io.LimitReader(r.Body, maxFileBytes)).Decode(&s); err != nil {
			http.Error(rw, "the share does not parse: "+err.Error(), http.StatusBadRequest)
			return
		}
		now, err := w.Prepare(r.Context(), r.URL.Query().Get("id"), s)
		if err != nil {
			http.Error(rw, err.Error(), http.StatusBadRequest)
			return
		}
		rw.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(rw).Encode(map[string]time.Time{"now": now})
	})
	mux.HandleFunc("POST "+releasePath, func(rw http.ResponseWriter, r *http.Request) {
		if !authorized(rw, r, token) {
			return
		}
		ns, err := strconv.ParseInt(r.URL.Query().Get("at"), 10, 64)
		if err != nil {
			http.Error(rw, "at: "+err.Error(), http.StatusBadRequest)
			return
		}
		if err := w.Release(r.Context(), r.URL.Query().Get("id"), time.Unix(0, ns)); err != nil {
			status(rw, err)
			return
		}
		rw.WriteHeader(http.StatusNoContent)
	})
	mux.HandleFunc("GET "+shareResultPath, func(rw http.ResponseWriter, r *http.Request) {
		if !authorized(rw, r, token) {
			return
		}
		ctx, cancel := context.WithTimeout(r.Context(), resultPoll)
		defer cancel()
		res, err := w.Result(ctx, r.URL.Query().Get("id"))
		switch {
		case errors.Is(err, context.DeadlineExceeded) && r.Context().Err() == nil:
			rw.WriteHeader(http.StatusAccepted)
			return
		case err != nil:
			status(rw, err)
			return
		}
		rw.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(rw).Encode(res)
	})
	mux.HandleFunc("POST "+stopPath, func(rw http.ResponseWriter, r *http.Request) {
		if !authorized(rw, r, token) {
			return
		}
		if err := w.Stop(r.Context(), r.URL.Query().Get("id")); err != nil {
			status(rw, err)
			return
		}
		rw.WriteHeader(http.StatusNoContent)
	})
}

// coordinatorMux serves pod 0's fleet: the provider posts the other pods' addresses.
func coordinatorMux(mux *http.ServeMux, f *httpFleet, token string) {
	mux.HandleFunc("POST "+peersPath, func(rw http.ResponseWriter, r *http.Request) {
		if !authorized(rw, r, token) {
			return
		}
		var body struct {
			Peers []string `json:"peers"`
		}
		if err := json.NewDecoder(io.LimitReader(r.Body, 1<<20)).Decode(&body); err != nil {
			http.Error(rw, err.Error(), http.StatusBadRequest)
			return
		}
		if err := f.setPeers(body.Peers); err != nil {
			http.Error(rw, err.Error(), http.StatusBadRequest)
			return
		}
		rw.WriteHeader(http.StatusNoContent)
	})
}
