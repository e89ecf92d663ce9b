// Package load sends streaming requests to an OpenAI-compatible endpoint and records, per
// request, what happened and when. It knows nothing of metrics, SLOs or Terraform.
//
// Three parts: Client streams one measured request into a RequestResult (SSEReader parses the
// stream); RunTrial drives a closed loop of them at a fixed concurrency; Control makes the
// unmeasured calls (health, models, tokenize, server info, cache flush).
//
// # Connection policy
//
// Every measured request gets a fresh TCP connection: the transport from NewTransport has
// keep-alives disabled. Reusing idle keep-alive connections against llama-server lost 1-3 of
// 24 requests to "server closed idle connection" races: the server closes an idle connection
// just as the client writes the next request on it, and the request fails although the
// server never saw it. A measured request is never retried (a retry would hide a real failure
// and distort its timing), so the race has to be impossible rather than recovered from; with
// no connection reuse it is. The cost is one TCP handshake per request, paid before
// RequestResult.Sent is taken (Sent is when the connection is ready and the request is about to be
// written), so it does not count towards TTFT.
//
// Control calls are the opposite: idempotent, unmeasured, and retried with backoff through
// go-retryablehttp on connection errors, 429 and 5xx.
//
// # Secrets
//
// The API key travels only in the Authorization header. It is never formatted into an error
// or log line; URLs in messages are redacted of user info, and Control additionally scrubs
// the key from any server text it quotes.
package load
