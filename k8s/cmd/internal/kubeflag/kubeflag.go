// Package kubeflag is the "kubernetes" engine of the k8s module's commands
// (sandbox, sandbox-bench, sandbox-mcp): -engine kubernetes with its flags
// -kubeconfig, -namespace, -helper-repo, -network-none-accepted and
// -pids-limit-accepted.
package kubeflag

import (
	"context"
	"flag"

	"github.com/dockersandbox/sandbox/engine"
	"github.com/dockersandbox/sandbox/internal/engineflag"
	"github.com/dockersandbox/sandbox/k8s"
	"github.com/dockersandbox/sandbox/k8s/helperimage"
	"github.com/go-logr/logr"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/klog/v2"
)

// Engines returns the engines of the k8s module's commands: Docker (the
// default) and Kubernetes. It silences client-go's log (klog): the
// commands report their own errors, once, and a stream the engine closes
// on purpose is not one.
func Engines() *engineflag.Set {
	klog.SetLogger(logr.Discard())
	s := engineflag.New(nil)
	s.Register(Kind())
	return s
}

// Kind is the "kubernetes" engine: the cluster of -kubeconfig (default
// $KUBECONFIG, then ~/.kube/config, then the pod's in-cluster account),
// pods in -namespace (default the kubeconfig context's, else "default").
func Kind() engineflag.Kind {
	return engineflag.Kind{Name: "kubernetes", Flags: func(fs *flag.FlagSet) engineflag.Opener {
		kubeconfig := fs.String("kubeconfig", "", "kubernetes: kubeconfig `file` (default $KUBECONFIG, ~/.kube/config, or in-cluster)")
		namespace := fs.String("namespace", "", "kubernetes: `namespace` of the pods (default the kubeconfig context's, else default)")
		repo := fs.String("helper-repo", helperimage.Repository, "kubernetes: `repository` of the helper image in your registry (its tag is the library's: "+helperimage.Tag()+")")
		noneOK := fs.Bool("network-none-accepted", false, "kubernetes: the namespace isolates pods (a deny-all NetworkPolicy): accept -network none and -secure")
		pidsOK := fs.Bool("pids-limit-accepted", false, "kubernetes: the nodes' kubelets set podPidsLimit: accept -pids and -secure")
		return func(ctx context.Context) (engine.Engine, error) {
			rules := clientcmd.NewDefaultClientConfigLoadingRules()
			rules.ExplicitPath = *kubeconfig
			cc := clientcmd.NewNonInteractiveDeferredLoadingClientConfig(rules, nil)
			cfg, err := cc.ClientConfig()
			if err != nil {
				return nil, err
			}
			ns := *namespace
			if ns == "" {
				if ns, _, err = cc.Namespace(); err != nil || ns == "" {
					ns = "default"
				}
			}
			opts := []k8s.Option{k8s.WithNamespace(ns), k8s.WithHelperImage(helperimage.Ref(*repo))}
			if *noneOK {
				opts = append(opts, k8s.WithNetworkNoneAccepted())
			}
			if *pidsOK {
				opts = append(opts, k8s.WithPidsLimitAccepted())
			}
			return k8s.New(ctx, cfg, opts...)
		}
	}}
}
