package k8s

import (
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/dockersandbox/sandbox/k8s/helperimage"
)

// Option configures an Engine (New).
type Option func(*options)

type options struct {
	namespace      string
	labels         map[string]string
	resources      corev1.ResourceRequirements
	runtimeClass   string
	nodeSelector   map[string]string
	tolerations    []corev1.Toleration
	podSecurity    *corev1.PodSecurityContext
	serviceAccount string
	helperImage    string
	pullPolicy     corev1.PullPolicy
	editPod        []func(*corev1.Pod)
	removeWait     time.Duration
	networkNoneOK  bool
	pidsLimitOK    bool
}

func defaultOptions() options {
	return options{
		namespace:   "default",
		helperImage: helperimage.Ref(""),
		pullPolicy:  corev1.PullIfNotPresent,
		removeWait:  DefaultRemoveWait,
	}
}

// DefaultRemoveWait bounds how long Remove waits for a deleted pod to be
// gone when its context has no earlier deadline.
const DefaultRemoveWait = 30 * time.Second

// listOne asks for at most one pod (New's reachability check).
var listOne = metav1.ListOptions{Limit: 1}

// WithNamespace sets the namespace of the pods ("default" by default).
func WithNamespace(ns string) Option { return func(o *options) { o.namespace = ns } }

// WithLabels adds Kubernetes labels to every pod (the sandbox's own labels
// are added too, where Kubernetes accepts them as labels).
func WithLabels(l map[string]string) Option {
	return func(o *options) {
		if o.labels == nil {
			o.labels = map[string]string{}
		}
		for k, v := range l {
			o.labels[k] = v
		}
	}
}

// WithResources sets the sandbox container's requests and limits, so that
// the scheduler can place pods. The sandbox's own memory and CPU limits
// (sandbox.WithMemory, WithCPUs) override the limits they name.
func WithResources(r corev1.ResourceRequirements) Option {
	return func(o *options) { o.resources = r }
}

// WithRuntimeClass sets the pods' RuntimeClass (e.g. gVisor or Kata).
func WithRuntimeClass(name string) Option { return func(o *options) { o.runtimeClass = name } }

// WithNodeSelector sets the pods' node selector.
func WithNodeSelector(sel map[string]string) Option {
	return func(o *options) { o.nodeSelector = sel }
}

// WithTolerations sets the pods' tolerations.
func WithTolerations(t ...corev1.Toleration) Option {
	return func(o *options) { o.tolerations = t }
}

// WithSecurityContext sets the pods' security context. The sandbox's user
// (sandbox.WithUser, numeric) still sets RunAsUser and RunAsGroup.
func WithSecurityContext(sc *corev1.PodSecurityContext) Option {
	return func(o *options) { o.podSecurity = sc }
}

// WithServiceAccount sets the pods' service account. Its token is never
// mounted (automountServiceAccountToken is false) unless WithPodSpec says
// otherwise.
func WithServiceAccount(name string) Option {
	return func(o *options) { o.serviceAccount = name }
}

// WithHelperImage sets the helper image's reference. The default is
// helperimage.Ref(""), "dockersandbox/helper:<tag>", whose tag follows the
// library's helper binaries; push that image to your registry with
// k8s/cmd/helperimage and give its name here, with the same tag.
func WithHelperImage(ref string) Option { return func(o *options) { o.helperImage = ref } }

// WithImagePullPolicy sets the pull policy of the sandbox and helper
// images (IfNotPresent by default; Never for images imported into the
// nodes).
func WithImagePullPolicy(p corev1.PullPolicy) Option {
	return func(o *options) { o.pullPolicy = p }
}

// WithPodSpec adds a function that edits each pod just before it is
// created: the escape hatch for what the options do not cover. Keep the
// sandbox container (named "sandbox") and its command, and the helper's
// init container and volume, or the sandbox will not start.
func WithPodSpec(fn func(*corev1.Pod)) Option {
	return func(o *options) { o.editPod = append(o.editPod, fn) }
}

// WithRemoveWait bounds how long Remove waits for a pod to be gone
// (DefaultRemoveWait by default).
func WithRemoveWait(d time.Duration) Option { return func(o *options) { o.removeWait = d } }

// WithNetworkNoneAccepted says that the namespace isolates pods (e.g. with
// a NetworkPolicy that denies all traffic): a sandbox asking for no
// network (sandbox.WithNetworkMode("none"), the secure profile) is then
// created. Without it such a sandbox is refused with an error wrapping
// errors.ErrUnsupported, since a pod always has the cluster's network.
func WithNetworkNoneAccepted() Option { return func(o *options) { o.networkNoneOK = true } }

// WithPidsLimitAccepted says that the nodes' kubelets limit the processes
// of each pod (podPidsLimit in the kubelet's configuration): a sandbox
// asking for a pids limit (sandbox.WithPidsLimit, the secure profile) is
// then created, under the kubelet's limit rather than its own. Without it
// such a sandbox is refused with an error wrapping errors.ErrUnsupported:
// a pod cannot set its own, and a limit silently not applied would let a
// fork bomb reach the node.
func WithPidsLimitAccepted() Option { return func(o *options) { o.pidsLimitOK = true } }
