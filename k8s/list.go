package k8s

import (
	"context"
	"fmt"

	"github.com/dockersandbox/sandbox/engine"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// List returns the engine's pods (in its namespace) whose sandbox labels
// include every one of labels ("" matches any value), in any state.
func (e *Engine) List(ctx context.Context, labels map[string]string) ([]engine.Info, error) {
	var out []engine.Info
	opts := metav1.ListOptions{LabelSelector: selector(labels), Limit: 500}
	for {
		pods, err := e.cs.CoreV1().Pods(e.opts.namespace).List(ctx, opts)
		if err != nil {
			return nil, fmt.Errorf("k8s: list pods: %w", mapErr(ctx, err))
		}
		for i := range pods.Items {
			if info := infoOf(&pods.Items[i]); matches(info.Labels, labels) {
				out = append(out, info)
			}
		}
		if pods.Continue == "" {
			return out, nil
		}
		opts.Continue = pods.Continue
	}
}
