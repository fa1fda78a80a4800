package sandbox

import (
	"net/http"
	"time"
)

// HTTPClient returns an *http.Client whose connections are made inside
// the sandbox (through Dial): "http://localhost:8000/" is a server in the
// sandbox, also with network "none". For previews and health checks. Its
// idle connections close after 30 s (an open connection keeps the
// sandbox's idle timeout from running); a request's context bounds it as
// usual. Its Transport is an *http.Transport, to adjust as needed.
func (s *DockerSandbox) HTTPClient() *http.Client {
	return &http.Client{Transport: &http.Transport{
		DialContext:           s.Dial,
		Proxy:                 nil, // a host's proxy cannot reach the sandbox
		ForceAttemptHTTP2:     false,
		MaxIdleConns:          16,
		IdleConnTimeout:       30 * time.Second,
		TLSHandshakeTimeout:   10 * time.Second,
		ExpectContinueTimeout: time.Second,
	}}
}
