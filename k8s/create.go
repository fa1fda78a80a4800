package k8s

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/dockersandbox/sandbox/engine"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/watch"
)

// ErrPodFailed: the pod cannot start (its image cannot be pulled, the
// helper's init container failed, the container cannot be created, or it
// ended before it ran).
var ErrPodFailed = errors.New("k8s: the pod failed to start")

// cleanupBound bounds the deletion of a pod that failed to start.
const cleanupBound = 10 * time.Second

// Create makes the sandbox's pod and waits, within ctx, until its sandbox
// container runs (scheduling and image pulls included: give ctx room for
// them). A pod that cannot start is deleted and the error wraps
// ErrPodFailed with the reason the kubelet gave; one still pending when
// ctx ends is deleted too.
func (e *Engine) Create(ctx context.Context, spec *engine.Spec) (engine.Info, error) {
	if err := ctx.Err(); err != nil {
		return engine.Info{}, err
	}
	pod, err := e.podFor(spec)
	if err != nil {
		return engine.Info{}, err
	}
	pods := e.cs.CoreV1().Pods(e.opts.namespace)
	created, err := pods.Create(ctx, pod, metav1.CreateOptions{})
	if err != nil {
		return engine.Info{}, fmt.Errorf("k8s: create pod: %w", mapErr(ctx, err))
	}
	running, err := e.waitRunning(ctx, created)
	if err != nil {
		dctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), cleanupBound)
		defer cancel()
		_ = e.Remove(dctx, created.Name)
		return engine.Info{}, fmt.Errorf("k8s: pod %s: %w", created.Name, err)
	}
	return infoOf(running), nil
}

// waitRunning watches the pod from the version Create returned until its
// sandbox container runs, or fails.
func (e *Engine) waitRunning(ctx context.Context, p *corev1.Pod) (*corev1.Pod, error) {
	pods := e.cs.CoreV1().Pods(e.opts.namespace)
	last := p
	for {
		if done, err := startedOrFailed(last); done || err != nil {
			return last, err
		}
		w, err := pods.Watch(ctx, metav1.ListOptions{
			FieldSelector:   fields.OneTermEqualSelector("metadata.name", p.Name).String(),
			ResourceVersion: last.ResourceVersion,
		})
		if err != nil {
			return nil, fmt.Errorf("watch: %w", mapErr(ctx, err))
		}
		for ev := range w.ResultChan() {
			if ev.Type == watch.Deleted {
				w.Stop()
				return nil, fmt.Errorf("%w: deleted while starting", engine.ErrNotFound)
			}
			if np, ok := ev.Object.(*corev1.Pod); ok {
				last = np
				if done, err := startedOrFailed(last); done || err != nil {
					w.Stop()
					return last, err
				}
			}
		}
		w.Stop()
		if err := ctx.Err(); err != nil {
			return nil, fmt.Errorf("%w: still %s (%s)", err, last.Status.Phase, pendingReason(last))
		}
		// The watch ended early (a timeout of the server's): get the pod again.
		if last, err = pods.Get(ctx, p.Name, metav1.GetOptions{}); err != nil {
			return nil, mapErr(ctx, err)
		}
	}
}

// startedOrFailed reports whether the sandbox container runs, or returns
// why it never will.
func startedOrFailed(p *corev1.Pod) (bool, error) {
	switch p.Status.Phase {
	case corev1.PodSucceeded, corev1.PodFailed:
		return false, fmt.Errorf("%w: it ended (%s): %s", ErrPodFailed, p.Status.Phase, pendingReason(p))
	}
	for _, cs := range append(append([]corev1.ContainerStatus(nil), p.Status.InitContainerStatuses...), p.Status.ContainerStatuses...) {
		if t := cs.State.Terminated; t != nil && (cs.Name == ContainerName || t.ExitCode != 0) {
			return false, fmt.Errorf("%w: container %s ended with %d (%s): %s", ErrPodFailed, cs.Name, t.ExitCode, t.Reason, t.Message)
		}
		if w := cs.State.Waiting; w != nil {
			switch w.Reason {
			case "ErrImagePull", "ImagePullBackOff", "ErrImageNeverPull", "InvalidImageName":
				if cs.Name == ContainerName { // the sandbox's image, not the helper's
					return false, fmt.Errorf("%w: %w: container %s (image %s): %s: %s", ErrPodFailed, engine.ErrImageNotFound, cs.Name, cs.Image, w.Reason, w.Message)
				}
				return false, fmt.Errorf("%w: container %s (image %s): %s: %s", ErrPodFailed, cs.Name, cs.Image, w.Reason, w.Message)
			case "CreateContainerConfigError", "CreateContainerError", "RunContainerError", "CrashLoopBackOff":
				return false, fmt.Errorf("%w: container %s (image %s): %s: %s", ErrPodFailed, cs.Name, cs.Image, w.Reason, w.Message)
			}
		}
	}
	cs := mainStatus(p)
	return p.Status.Phase == corev1.PodRunning && cs != nil && cs.State.Running != nil, nil
}

// pendingReason says why a pod is not running yet, as far as its status
// tells.
func pendingReason(p *corev1.Pod) string {
	for _, c := range p.Status.Conditions {
		if c.Status == corev1.ConditionFalse && c.Message != "" {
			return fmt.Sprintf("%s: %s", c.Reason, c.Message)
		}
	}
	for _, cs := range append(append([]corev1.ContainerStatus(nil), p.Status.InitContainerStatuses...), p.Status.ContainerStatuses...) {
		if w := cs.State.Waiting; w != nil && w.Reason != "" {
			return fmt.Sprintf("%s: %s %s", cs.Name, w.Reason, w.Message)
		}
	}
	return "no reason given"
}
