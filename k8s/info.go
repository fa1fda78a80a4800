package k8s

import (
	"github.com/dockersandbox/sandbox/engine"
	corev1 "k8s.io/api/core/v1"
)

// infoOf describes a pod as the engine's Info: the sandbox's labels,
// user and working directory come from the pod's annotations.
func infoOf(p *corev1.Pod) engine.Info {
	info := engine.Info{
		ID:           p.Name,
		Name:         p.Name,
		Labels:       decodeLabels(p.Annotations[annLabels]),
		State:        stateOf(p),
		Created:      p.CreationTimestamp.Time,
		User:         p.Annotations[annUser],
		WorkingDir:   p.Annotations[annWorkingDir],
		RemoveOnExit: p.Annotations[annRemoveOnExit] == "true",
	}
	if c := mainContainer(p); c != nil {
		info.Image = c.Image
		info.Command = append([]string(nil), c.Command...)
	}
	if cs := mainStatus(p); cs != nil && cs.State.Terminated != nil {
		info.ExitCode = int(cs.State.Terminated.ExitCode)
	}
	return info
}

// stateOf maps a pod's phase and its sandbox container's state onto the
// engine's states: being deleted is "removing"; pending (scheduling,
// pulling, the init container) is "created"; running with the container
// running is "running"; a pod whose container ended (or that ended) is
// "exited".
func stateOf(p *corev1.Pod) engine.State {
	if p.DeletionTimestamp != nil {
		return engine.StateRemoving
	}
	cs := mainStatus(p)
	switch p.Status.Phase {
	case corev1.PodPending:
		return engine.StateCreated
	case corev1.PodRunning:
		if cs != nil && cs.State.Terminated != nil {
			return engine.StateExited
		}
		if cs != nil && cs.State.Running != nil {
			return engine.StateRunning
		}
		return engine.StateCreated
	case corev1.PodSucceeded, corev1.PodFailed:
		return engine.StateExited
	}
	return engine.StateUnknown
}

func mainContainer(p *corev1.Pod) *corev1.Container {
	for i := range p.Spec.Containers {
		if p.Spec.Containers[i].Name == ContainerName {
			return &p.Spec.Containers[i]
		}
	}
	return nil
}

func mainStatus(p *corev1.Pod) *corev1.ContainerStatus {
	for i := range p.Status.ContainerStatuses {
		if p.Status.ContainerStatuses[i].Name == ContainerName {
			return &p.Status.ContainerStatuses[i]
		}
	}
	return nil
}
