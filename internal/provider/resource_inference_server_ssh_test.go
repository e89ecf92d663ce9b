package provider

import (
	"crypto/ed25519"
	"crypto/rand"
	"encoding/pem"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"regexp"
	"sync"
	"testing"

	"github.com/hashicorp/terraform-plugin-testing/helper/resource"
	"github.com/hashicorp/terraform-plugin-testing/knownvalue"
	"github.com/hashicorp/terraform-plugin-testing/statecheck"
	"github.com/hashicorp/terraform-plugin-testing/tfjsonpath"
	"golang.org/x/crypto/ssh"
	"golang.org/x/crypto/ssh/knownhosts"
)

// startSSHD runs a minimal ssh server on 127.0.0.1 that accepts one client key and forwards
// OpenSSH direct-streamlocal channels (what the provider opens for ssh://) to local unix
// sockets, here the real Docker Engine's. It returns the port, the client key (PEM) and a
// known_hosts file holding the server's key.
func startSSHD(t *testing.T) (int, string, string) {
	t.Helper()
	_, hostPriv, _ := ed25519.GenerateKey(rand.Reader)
	clientPub, clientPriv, _ := ed25519.GenerateKey(rand.Reader)
	hostSigner, err := ssh.NewSignerFromKey(hostPriv)
	if err != nil {
		t.Fatal(err)
	}
	allowed, err := ssh.NewPublicKey(clientPub)
	if err != nil {
		t.Fatal(err)
	}
	cfg := &ssh.ServerConfig{PublicKeyCallback: func(_ ssh.ConnMetadata, k ssh.PublicKey) (*ssh.Permissions, error) {
		if string(k.Marshal()) == string(allowed.Marshal()) {
			return &ssh.Permissions{}, nil
		}
		return nil, fmt.Errorf("unknown key")
	}}
	cfg.AddHostKey(hostSigner)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	var mu sync.Mutex
	var conns []io.Closer
	track := func(c io.Closer) {
		mu.Lock()
		conns = append(conns, c)
		mu.Unlock()
	}
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			track(c)
			wg.Add(1)
			go func() {
				defer wg.Done()
				serveSSH(c, cfg, &wg, track)
			}()
		}
	}()
	t.Cleanup(func() {
		ln.Close()
		mu.Lock()
		for _, c := range conns {
			c.Close()
		}
		mu.Unlock()
		wg.Wait()
	})
	port := ln.Addr().(*net.TCPAddr).Port
	block, err := ssh.MarshalPrivateKey(clientPriv, "")
	if err != nil {
		t.Fatal(err)
	}
	kh := filepath.Join(t.TempDir(), "known_hosts")
	line := knownhosts.Line([]string{knownhosts.Normalize(fmt.Sprintf("127.0.0.1:%d", port))}, hostSigner.PublicKey())
	if err := os.WriteFile(kh, []byte(line+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	return port, string(pem.EncodeToMemory(block)), kh
}

func serveSSH(c net.Conn, cfg *ssh.ServerConfig, wg *sync.WaitGroup, track func(io.Closer)) {
	sc, chans, reqs, err := ssh.NewServerConn(c, cfg)
	if err != nil {
		c.Close()
		return
	}
	defer sc.Close()
	go ssh.DiscardRequests(reqs)
	for nc := range chans {
		if nc.ChannelType() != "direct-streamlocal@openssh.com" {
			_ = nc.Reject(ssh.UnknownChannelType, "only streamlocal forwarding")
			continue
		}
		var req struct {
			Path      string
			Reserved0 string
			Reserved1 uint32
		}
		if err := ssh.Unmarshal(nc.ExtraData(), &req); err != nil {
			_ = nc.Reject(ssh.ConnectionFailed, err.Error())
			continue
		}
		up, err := net.Dial("unix", req.Path)
		if err != nil {
			_ = nc.Reject(ssh.ConnectionFailed, err.Error())
			continue
		}
		ch, creqs, err := nc.Accept()
		if err != nil {
			up.Close()
			continue
		}
		track(up)
		go ssh.DiscardRequests(creqs)
		wg.Add(2)
		go func() { defer wg.Done(); _, _ = io.Copy(up, ch); _ = up.(*net.UnixConn).CloseWrite() }()
		go func() { defer wg.Done(); _, _ = io.Copy(ch, up); _ = ch.CloseWrite(); ch.Close() }()
	}
}

// TestAccInferenceServer_remoteSSH deploys through docker_host = "ssh://..." with a checked
// host key: every Engine API call travels over ssh to the engine's socket.
func TestAccInferenceServer_remoteSSH(t *testing.T) {
	b := accEngine(t)
	port, key, knownHosts := startSSHD(t)
	name := accContainer + "-ssh"
	providerCfg := fmt.Sprintf(`
provider "llmserve" {
  docker_host          = "ssh://root@127.0.0.1:%d"
  ssh_private_key      = %q
  ssh_known_hosts_file = %q
}
`, port, key, knownHosts)
	resource.Test(t, resource.TestCase{
		ProtoV6ProviderFactories: testAccProtoV6ProviderFactories,
		CheckDestroy:             testAccCheckGone(b, name),
		Steps: []resource.TestStep{
			{
				Config: providerCfg + testAccInferenceServerConfig(name, ""),
				ConfigStateChecks: []statecheck.StateCheck{
					statecheck.ExpectKnownValue(accResource, tfjsonpath.New("running"), knownvalue.Bool(true)),
					// A remote engine's published port is reached under the ssh host's name.
					statecheck.ExpectKnownValue(accResource, tfjsonpath.New("endpoint"), knownvalue.StringRegexp(regexp.MustCompile(`^http://127\.0\.0\.1:\d+$`))),
				},
				Check: testAccCheckCompletion("sim/qwen-test", ""),
			},
		},
	})
	// A host key that is not in known_hosts is refused, never skipped: create fails before
	// anything reaches the engine.
	// An empty known_hosts file, not /dev/null: the provider reads regular files only.
	emptyKnownHosts := filepath.Join(t.TempDir(), "empty_known_hosts")
	if err := os.WriteFile(emptyKnownHosts, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	resource.Test(t, resource.TestCase{
		ProtoV6ProviderFactories: testAccProtoV6ProviderFactories,
		CheckDestroy:             testAccCheckGone(b, name),
		Steps: []resource.TestStep{{
			Config: fmt.Sprintf(`
provider "llmserve" {
  docker_host          = "ssh://root@127.0.0.1:%d"
  ssh_private_key      = %q
  ssh_known_hosts_file = %q
}
`, port, key, emptyKnownHosts) + testAccInferenceServerConfig(name, ""),
			ExpectError: regexp.MustCompile(`knownhosts:\s+key\s+is\s+unknown`),
		}},
	})
}
