package k8s

import (
	"context"
	"fmt"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/watch"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
)

// removeGrace is the grace period of a deletion. Not 0: the API server
// drops a pod deleted with grace 0 at once, while its processes may still
// run; with 1 s the kubelet stops the containers first (the helper, PID 1,
// exits at once on SIGTERM, which kills everything else in the pod), and
// the pod is gone only once they are.
const removeGrace = int64(1)

// Remove deletes the pod named id and waits until it is gone, within ctx
// and at most WithRemoveWait (DefaultRemoveWait). A missing pod is not an
// error; a pod deleted already is waited for.
func (e *Engine) Remove(ctx context.Context, id string) error {
	if _, ok := ctx.Deadline(); !ok || e.opts.removeWait > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, e.opts.removeWait)
		defer cancel()
	}
	pods := e.cs.CoreV1().Pods(e.opts.namespace)
	grace := removeGrace
	err := pods.Delete(ctx, id, metav1.DeleteOptions{GracePeriodSeconds: &grace})
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("k8s: delete pod %s: %w", id, mapErr(ctx, err))
	}
	for {
		p, err := pods.Get(ctx, id, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return nil
		}
		if err != nil {
			return fmt.Errorf("k8s: wait for pod %s to go: %w", id, mapErr(ctx, err))
		}
		w, err := pods.Watch(ctx, metav1.ListOptions{
			FieldSelector:   fields.OneTermEqualSelector("metadata.name", id).String(),
			ResourceVersion: p.ResourceVersion,
		})
		if err != nil {
			return fmt.Errorf("k8s: wait for pod %s to go: %w", id, mapErr(ctx, err))
		}
		for ev := range w.ResultChan() {
			if ev.Type == watch.Deleted {
				w.Stop()
				return nil
			}
		}
		w.Stop()
		if err := ctx.Err(); err != nil {
			return fmt.Errorf("k8s: pod %s still there: %w", id, err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}
