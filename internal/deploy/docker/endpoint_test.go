package docker

import "testing"

func TestEndpointURL(t *testing.T) {
	for _, tc := range []struct {
		name, dockerHost, bind string
		port                   int
		want                   string
	}{
		{"local socket, loopback", "unix:///var/run/docker.sock", "127.0.0.1", 18080, "http://127.0.0.1:18080"},
		{"default host, wildcard", "", "0.0.0.0", 8000, "http://127.0.0.1:8000"},
		{"local, specific address", "", "10.1.2.3", 30000, "http://10.1.2.3:30000"},
		{"remote over ssh, wildcard", "ssh://ops@gpu-host-1", "0.0.0.0", 30000, "http://gpu-host-1:30000"},
		{"remote over tcp, loopback", "tcp://gpu-host-1:2376", "127.0.0.1", 30000, "http://gpu-host-1:30000"},
		{"remote, host networking", "ssh://ops@gpu-host-1:22", "", 30000, "http://gpu-host-1:30000"},
		{"remote, specific address", "tcp://gpu-host-1:2376", "192.0.2.7", 8080, "http://192.0.2.7:8080"},
		{"ipv6 bind", "", "::1", 8080, "http://[::1]:8080"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := EndpointURL(tc.dockerHost, tc.bind, tc.port); got != tc.want {
				t.Errorf("EndpointURL(%q, %q, %d) = %q, want %q", tc.dockerHost, tc.bind, tc.port, got, tc.want)
			}
		})
	}
}
