// Package k8s is the sandbox library's Kubernetes engine: each sandbox is a
// pod whose main container runs the library's helper as PID 1 in the
// user's image. An init container of the helper image (package
// helperimage) copies the helper into an emptyDir mounted at the helper's
// directory, so any image works, with or without a shell. The helper's
// channel runs over one long-lived exec stream (client-go's SPDY
// remotecommand, WebSocket as the fallback), and files of every size move
// over it (engine.ExecCopier); the engine's CopyTo and CopyFrom run the
// helper's own tar and untar modes over an exec. The core module does not
// import client-go: this package is a module of its own.
//
//	eng, err := k8s.New(ctx, cfg, k8s.WithNamespace("agents"))
//	sb, err := sandbox.New(ctx, sandbox.WithEngine(eng), sandbox.WithImage("python:3.13"))
package k8s

import (
	"context"
	"fmt"
	"sync/atomic"

	"github.com/dockersandbox/sandbox/engine"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
)

// Engine runs sandboxes as pods of one namespace. It implements
// engine.Engine; it is not an engine.Pauser or engine.Stopper (a pod can
// be neither frozen nor stopped and started again).
type Engine struct {
	cfg  *rest.Config
	cs   *kubernetes.Clientset
	opts options
	// noSPDY: the API server (or a proxy) refused an SPDY exec, so execs
	// go over WebSocket from then on. SPDY comes first: the API server
	// passes its bytes through to the kubelet, while it translates a
	// WebSocket exec into SPDY for the kubelet (its stream translator),
	// which costs a copy of every byte; 32 MiB up took 212 ms against
	// 300 (BENCHMARKS.md).
	noSPDY atomic.Bool
}

var (
	_ engine.Engine     = (*Engine)(nil)
	_ engine.ExecCopier = (*Engine)(nil)
)

// The client's rate limit when cfg sets none (QPS 0).
const (
	DefaultQPS   = 50
	DefaultBurst = 100
)

// New returns an engine for the cluster cfg describes (Kubeconfig reads
// one from a file); a cfg without a rate limit gets DefaultQPS and
// DefaultBurst. It checks that the API server answers within ctx: an
// unreachable one is an error wrapping engine.ErrUnreachable.
func New(ctx context.Context, cfg *rest.Config, opts ...Option) (*Engine, error) {
	if cfg == nil {
		return nil, fmt.Errorf("k8s: no rest.Config")
	}
	o := defaultOptions()
	for _, fn := range opts {
		fn(&o)
	}
	cfg = rest.CopyConfig(cfg)
	if cfg.UserAgent == "" {
		cfg.UserAgent = "dockersandbox"
	}
	if cfg.QPS == 0 && cfg.RateLimiter == nil {
		// client-go's default (5 requests/s, bursts of 10) throttled 50
		// concurrent creations by seconds; the API server's priority and
		// fairness protects it anyway.
		cfg.QPS, cfg.Burst = DefaultQPS, DefaultBurst
	}
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return nil, fmt.Errorf("k8s: %w", err)
	}
	e := &Engine{cfg: cfg, cs: cs, opts: o}
	if _, err := cs.CoreV1().Pods(o.namespace).List(ctx, listOne); err != nil {
		return nil, fmt.Errorf("k8s: list pods in namespace %q: %w", o.namespace, mapErr(ctx, err))
	}
	return e, nil
}

// Kubeconfig returns the client configuration of a kubeconfig file (its
// current context); path "" uses the usual rules ($KUBECONFIG, then
// ~/.kube/config).
func Kubeconfig(path string) (*rest.Config, error) {
	rules := clientcmd.NewDefaultClientConfigLoadingRules()
	if path != "" {
		rules.ExplicitPath = path
	}
	cfg, err := clientcmd.NewNonInteractiveDeferredLoadingClientConfig(rules, nil).ClientConfig()
	if err != nil {
		return nil, fmt.Errorf("k8s: kubeconfig: %w", err)
	}
	return cfg, nil
}

// Name returns "kubernetes".
func (e *Engine) Name() string { return "kubernetes" }

// Namespace returns the namespace of the engine's pods.
func (e *Engine) Namespace() string { return e.opts.namespace }

// Close releases nothing: the clients hold only idle connections. The
// pods stay.
func (e *Engine) Close() error { return nil }
