package deploy

import "testing"

// TestListenAddress: with host networking the engine binds bind_address itself; published
// (bridge) it binds every address of its own namespace and the published port restricts it.
func TestListenAddress(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		p    Placement
		want string
	}{
		{Placement{BindAddress: "10.0.0.5", HostNetwork: true}, "10.0.0.5"},
		{Placement{BindAddress: "127.0.0.1", HostNetwork: true}, "127.0.0.1"},
		{Placement{BindAddress: "127.0.0.1"}, ""},
		{Placement{BindAddress: "0.0.0.0"}, ""},
	} {
		if got := tt.p.ListenAddress(); got != tt.want {
			t.Errorf("%+v.ListenAddress() = %q, want %q", tt.p, got, tt.want)
		}
	}
}
