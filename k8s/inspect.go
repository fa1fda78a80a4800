package k8s

import (
	"context"
	"fmt"

	"github.com/dockersandbox/sandbox/engine"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Inspect describes the pod named id. A missing pod is engine.ErrNotFound.
func (e *Engine) Inspect(ctx context.Context, id string) (engine.Info, error) {
	p, err := e.cs.CoreV1().Pods(e.opts.namespace).Get(ctx, id, metav1.GetOptions{})
	if err != nil {
		return engine.Info{}, fmt.Errorf("k8s: inspect %s: %w", id, mapErr(ctx, err))
	}
	return infoOf(p), nil
}
