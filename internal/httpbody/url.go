package httpbody

import (
	"errors"
	"net/url"
)

// StripURL drops the *url.Error wrapper from a transport error: the caller's message already
// names the URL (redacted), and url.Error would repeat it with any password in it.
func StripURL(err error) error {
	var ue *url.Error
	if errors.As(err, &ue) {
		return ue.Err
	}
	return err
}
