package httpbody

import (
	"strings"
	"testing"
)

func TestOneLine(t *testing.T) {
	nginx404 := "<html>\r\n<head><title>404 Not Found</title></head>\r\n<body>\r\n<center><h1>404 Not Found</h1></center>\r\n<hr><center>nginx/1.25.3</center>\r\n</body>\r\n</html>\r\n"
	long := strings.Repeat("é", 150) // 300 bytes, two per rune
	for _, tc := range []struct {
		name, body, want string
	}{
		{"empty", "  \n", ""},
		{"nginx 404 page", nginx404, "404 Not Found"},
		{"html without title", "<!DOCTYPE html><html><body><h1>Bad &amp; gateway</h1><p>upstream</p></body></html>", "Bad & gateway"},
		{"html text only", "<!doctype html><html><body><script>x()</script><p>model\n  is   loading</p></body></html>", "model is loading"},
		{"openai error", `{"error":{"message":"The model 'x' does not exist","type":"invalid_request_error","code":404}}`, "The model 'x' does not exist"},
		{"vllm error", `{"object":"error","message":"max_tokens must be at least 1","type":"BadRequestError","code":400}`, "max_tokens must be at least 1"},
		{"fastapi detail", `{"detail":"Not Found"}`, "Not Found"},
		{"fastapi validation", `{"detail":[{"loc":["body","model"],"msg":"field required"},{"msg":"value is not a valid integer"}]}`, "field required; value is not a valid integer"},
		{"string error", `{"error":"Unauthorized"}`, "Unauthorized"},
		{"json without message", `{"status":"down"}`, `{"status":"down"}`},
		{"cut json", `{"error":{"message":"abc`, `{"error":{"message":"abc`},
		{"multi-line text", "Traceback (most recent call last):\n  File \"x.py\"\n    raise\nValueError: boom\n", `Traceback (most recent call last): File "x.py" raise ValueError: boom`},
		{"long text cut on a rune", long, strings.Repeat("é", 100) + "..."},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := OneLine([]byte(tc.body))
			if got != tc.want {
				t.Errorf("OneLine = %q, want %q", got, tc.want)
			}
			if strings.ContainsAny(got, "\r\n") {
				t.Errorf("OneLine returned several lines: %q", got)
			}
		})
	}
}
