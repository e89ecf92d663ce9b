package main

import (
	"slices"
	"testing"
)

func TestProtocolArgs(t *testing.T) {
	env := func(m map[string]string) func(string) string { return func(k string) string { return m[k] } }
	tests := []struct {
		name   string
		engine string
		argv   []string
		env    map[string]string
		want   []string
	}{
		{"no protocol", "sglang", nil, nil, nil},
		{"sglang as launched", "sglang", []string{"--enable-metrics", "--enable-cache-report"}, map[string]string{"SIMENGINE_PROTOCOL": "auto"}, []string{"-protocol=sglang"}},
		{"sglang bare", "sglang", nil, map[string]string{"SIMENGINE_PROTOCOL": "auto"}, []string{"-protocol=sglang", "-no-metrics", "-no-cache-report"}},
		{"sglang early 0.4", "sglang", []string{"--enable-metrics"}, map[string]string{"SIMENGINE_PROTOCOL": "sglang-0.4-early"}, []string{"-protocol=sglang-0.4-early", "-no-cache-report"}},
		{"vllm dev mode", "vllm", []string{"--enable-prompt-tokens-details"}, map[string]string{"SIMENGINE_PROTOCOL": "auto", "VLLM_SERVER_DEV_MODE": "1"}, []string{"-protocol=vllm", "-dev-mode"}},
		{"vllm plain", "vllm", nil, map[string]string{"SIMENGINE_PROTOCOL": "auto"}, []string{"-protocol=vllm", "-no-cache-report"}},
		{"llamacpp", "llamacpp", []string{"--metrics"}, map[string]string{"SIMENGINE_PROTOCOL": "auto"}, []string{"-protocol=llamacpp"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := protocolArgs(tt.engine, tt.argv, env(tt.env)); !slices.Equal(got, tt.want) {
				t.Errorf("protocolArgs = %q, want %q", got, tt.want)
			}
		})
	}
}
