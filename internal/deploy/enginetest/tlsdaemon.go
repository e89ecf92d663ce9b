package enginetest

import (
	"bufio"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"fmt"
	"math/big"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/docker/docker/client"
)

// TLSMaterial is a private CA with a server certificate for 127.0.0.1 and localhost and a
// client certificate, all PEM: what a dockerd with --tlsverify and its client need.
type TLSMaterial struct {
	CAPEM                       []byte
	ServerCertPEM, ServerKeyPEM []byte
	ClientCertPEM, ClientKeyPEM []byte
}

// NewTLSMaterial generates a fresh CA and the two certificates it signs.
func NewTLSMaterial() (*TLSMaterial, error) {
	caKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, fmt.Errorf("generating CA key: %w", err)
	}
	now := time.Now()
	caTmpl := &x509.Certificate{
		SerialNumber:          big.NewInt(1),
		Subject:               pkix.Name{CommonName: "llmserve test engine CA"},
		NotBefore:             now.Add(-time.Hour),
		NotAfter:              now.Add(24 * time.Hour),
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageCRLSign,
		BasicConstraintsValid: true,
		IsCA:                  true,
	}
	caDER, err := x509.CreateCertificate(rand.Reader, caTmpl, caTmpl, &caKey.PublicKey, caKey)
	if err != nil {
		return nil, fmt.Errorf("self-signing CA: %w", err)
	}
	ca, err := x509.ParseCertificate(caDER)
	if err != nil {
		return nil, err
	}
	leaf := func(serial int64, cn string, usage x509.ExtKeyUsage, ips []net.IP, names []string) (certPEM, keyPEM []byte, err error) {
		key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
		if err != nil {
			return nil, nil, fmt.Errorf("generating key for %s: %w", cn, err)
		}
		tmpl := &x509.Certificate{
			SerialNumber: big.NewInt(serial),
			Subject:      pkix.Name{CommonName: cn},
			NotBefore:    now.Add(-time.Hour),
			NotAfter:     now.Add(24 * time.Hour),
			KeyUsage:     x509.KeyUsageDigitalSignature,
			ExtKeyUsage:  []x509.ExtKeyUsage{usage},
			IPAddresses:  ips,
			DNSNames:     names,
		}
		der, err := x509.CreateCertificate(rand.Reader, tmpl, ca, &key.PublicKey, caKey)
		if err != nil {
			return nil, nil, fmt.Errorf("signing certificate for %s: %w", cn, err)
		}
		keyDER, err := x509.MarshalPKCS8PrivateKey(key)
		if err != nil {
			return nil, nil, err
		}
		return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}),
			pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: keyDER}), nil
	}
	m := &TLSMaterial{CAPEM: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: caDER})}
	m.ServerCertPEM, m.ServerKeyPEM, err = leaf(2, "localhost", x509.ExtKeyUsageServerAuth,
		[]net.IP{net.IPv4(127, 0, 0, 1), net.IPv6loopback}, []string{"localhost"})
	if err != nil {
		return nil, err
	}
	m.ClientCertPEM, m.ClientKeyPEM, err = leaf(3, "llmserve test client", x509.ExtKeyUsageClientAuth, nil, nil)
	if err != nil {
		return nil, err
	}
	return m, nil
}

// WriteClientDir writes the client side in the DOCKER_CERT_PATH layout (ca.pem, cert.pem,
// key.pem) into dir.
func (m *TLSMaterial) WriteClientDir(dir string) error {
	return writeFiles(dir, map[string][]byte{"ca.pem": m.CAPEM, "cert.pem": m.ClientCertPEM, "key.pem": m.ClientKeyPEM})
}

func writeFiles(dir string, files map[string][]byte) error {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return err
	}
	for name, data := range files {
		if err := os.WriteFile(filepath.Join(dir, name), data, 0o600); err != nil {
			return err
		}
	}
	return nil
}

// TLSDaemon is a second dockerd, private to one test, that serves the Engine API over TCP
// with --tlsverify on 127.0.0.1 and, for the test's own housekeeping, on a unix socket.
type TLSDaemon struct {
	// Host is the tcp:// address the provider is pointed at.
	Host string
	// Client talks to the daemon over its unix socket, bypassing TLS, to prepare images and
	// check what is left.
	Client *client.Client
	dir    string
	log    string
}

// StartTLSDaemon starts dockerd with its own data root, exec root, pid file and sockets
// under a fresh directory, its own bridge and no iptables, so it cannot disturb the host's
// daemon. It needs root and dockerd in PATH; if the daemon does not come up the test fails
// with the daemon's log. Everything is stopped, unmounted and removed when the test ends.
func StartTLSDaemon(tb testing.TB, m *TLSMaterial) *TLSDaemon {
	tb.Helper()
	bin, err := exec.LookPath("dockerd")
	if err != nil {
		tb.Fatalf("the tcp+TLS test runs its own dockerd and needs it in PATH (Debian: docker.io): %v", err)
	}
	// A short root keeps containerd's socket paths under the 108-byte unix limit.
	dir, err := os.MkdirTemp("", "llmserve-dockerd-")
	if err != nil {
		tb.Fatal(err)
	}
	d := &TLSDaemon{dir: dir, log: filepath.Join(dir, "dockerd.log")}
	tlsDir := filepath.Join(dir, "tls")
	if err := writeFiles(tlsDir, map[string][]byte{"ca.pem": m.CAPEM, "server.pem": m.ServerCertPEM, "server-key.pem": m.ServerKeyPEM}); err != nil {
		tb.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "daemon.json"), []byte("{}\n"), 0o600); err != nil {
		tb.Fatal(err)
	}
	port, err := freePort()
	if err != nil {
		tb.Fatal(err)
	}
	d.Host = "tcp://127.0.0.1:" + strconv.Itoa(port)
	sock := filepath.Join(dir, "docker.sock")
	logf, err := os.Create(d.log)
	if err != nil {
		tb.Fatal(err)
	}
	// A bridge of its own rather than --bridge=none: with the bridge disabled dockerd deletes
	// the host's docker0 at start, which would break the main daemon's containers.
	bridge := fmt.Sprintf("llmtls%d", os.Getpid()%100000)
	if out, err := exec.Command("ip", "link", "add", bridge, "type", "bridge").CombinedOutput(); err != nil {
		_ = os.RemoveAll(dir)
		tb.Fatalf("creating bridge %s for the second dockerd (needs iproute2 and root): %v: %s", bridge, err, out)
	}
	tb.Cleanup(func() { _ = exec.Command("ip", "link", "del", bridge).Run() })
	if out, err := exec.Command("ip", "addr", "add", "172.31.254.1/24", "dev", bridge).CombinedOutput(); err != nil {
		tb.Fatalf("addressing bridge %s: %v: %s", bridge, err, out)
	}
	cmd := exec.Command(bin,
		"--host", "unix://"+sock,
		"--host", d.Host,
		"--tlsverify",
		"--tlscacert", filepath.Join(tlsDir, "ca.pem"),
		"--tlscert", filepath.Join(tlsDir, "server.pem"),
		"--tlskey", filepath.Join(tlsDir, "server-key.pem"),
		"--data-root", filepath.Join(dir, "data"),
		"--exec-root", filepath.Join(dir, "exec"),
		"--pidfile", filepath.Join(dir, "dockerd.pid"),
		"--config-file", filepath.Join(dir, "daemon.json"),
		"--bridge", bridge,
		"--iptables=false",
		"--ip6tables=false",
		"--ip-forward=false",
		"--ip-masq=false",
		"--userland-proxy=false",
	)
	cmd.Stdout, cmd.Stderr = logf, logf
	// Its own process group, so the daemon and the containerd it spawns can be killed
	// together if a graceful stop hangs.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		logf.Close()
		_ = os.RemoveAll(dir)
		tb.Fatalf("starting %s: %v", bin, err)
	}
	exited := make(chan struct{})
	go func() {
		_ = cmd.Wait()
		logf.Close()
		close(exited)
	}()
	tb.Cleanup(func() {
		if d.Client != nil {
			select {
			case <-exited: // nothing to sweep; the failure already carries the log
			default:
				ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
				if err := Sweep(ctx, d.Client, false); err != nil {
					tb.Errorf("second dockerd: %v", err)
				}
				cancel()
			}
			_ = d.Client.Close()
		}
		_ = cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-exited:
		case <-time.After(30 * time.Second):
			tb.Errorf("second dockerd did not stop within 30s of SIGTERM; killing it")
			// The group holds the daemon and the containerd it spawned, which would
			// otherwise outlive it.
			_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
			<-exited
		}
		if err := unmountUnder(dir); err != nil {
			tb.Errorf("cleaning up the second dockerd: %v", err)
		}
		if err := os.RemoveAll(dir); err != nil {
			tb.Errorf("removing the second dockerd's directory: %v", err)
		}
	})

	d.Client, err = client.NewClientWithOpts(client.WithHost("unix://"+sock), client.WithAPIVersionNegotiation())
	if err != nil {
		tb.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	for {
		pctx, pcancel := context.WithTimeout(ctx, 2*time.Second)
		_, err := d.Client.Ping(pctx)
		pcancel()
		if err == nil {
			return d
		}
		select {
		case <-exited:
			tb.Fatalf("the second dockerd exited before it answered: %v\n--- dockerd log ---\n%s", cmd.ProcessState, d.Log())
		case <-ctx.Done():
			tb.Fatalf("the second dockerd did not answer on %s within 90s: %v\n--- dockerd log ---\n%s", sock, err, d.Log())
		case <-time.After(200 * time.Millisecond):
		}
	}
}

// Log is the daemon's output so far, for failure messages.
func (d *TLSDaemon) Log() string {
	b, err := os.ReadFile(d.log)
	if err != nil {
		return fmt.Sprintf("(no log: %v)", err)
	}
	const max = 8000
	if len(b) > max {
		b = b[len(b)-max:]
	}
	return string(b)
}

func freePort() (int, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, fmt.Errorf("finding a free port: %w", err)
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port, nil
}

// FreePort is a TCP port on 127.0.0.1 that nothing listens on right now.
func FreePort(tb testing.TB) int {
	tb.Helper()
	p, err := freePort()
	if err != nil {
		tb.Fatal(err)
	}
	return p
}

// unmountUnder detaches every mount below dir, deepest first: overlay layers, shm and netns
// files a daemon stopped the hard way leaves behind.
func unmountUnder(dir string) error {
	f, err := os.Open("/proc/self/mountinfo")
	if err != nil {
		return err
	}
	defer f.Close()
	var points []string
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) < 5 {
			continue
		}
		p := unescapeMount(fields[4])
		if p == dir || strings.HasPrefix(p, dir+"/") {
			points = append(points, p)
		}
	}
	if err := sc.Err(); err != nil {
		return err
	}
	sort.Sort(sort.Reverse(sort.StringSlice(points)))
	var errs []error
	for _, p := range points {
		if err := syscall.Unmount(p, syscall.MNT_DETACH); err != nil && !errors.Is(err, syscall.EINVAL) && !errors.Is(err, syscall.ENOENT) {
			errs = append(errs, fmt.Errorf("unmounting %s: %w", p, err))
		}
	}
	return errors.Join(errs...)
}

// unescapeMount undoes mountinfo's octal escapes (\040 for a space and so on).
func unescapeMount(s string) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+4 <= len(s) {
			if n, err := strconv.ParseUint(s[i+1:i+4], 8, 8); err == nil {
				b.WriteByte(byte(n))
				i += 3
				continue
			}
		}
		b.WriteByte(s[i])
	}
	return b.String()
}
