package k8s

import (
	"crypto/rand"
	"errors"
	"fmt"
	"math"
	"path"
	"strconv"
	"strings"

	"github.com/dockersandbox/sandbox/engine"
	"github.com/dockersandbox/sandbox/k8s/helperimage"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Names in the pods the engine makes.
const (
	// ContainerName is the sandbox's container.
	ContainerName = "sandbox"
	// InitContainerName is the init container that installs the helper.
	InitContainerName = "install-helper"
	volHelper         = "dockersandbox-helper"
	volWorkspace      = "dockersandbox-workspace"
	initWorkspace     = "/workspace-init" // the workspace in the init container
)

// parseUser returns the numeric uid and gid of a Spec.User: "" (the
// image's: -1, -1), "uid" or "uid:gid". A pod runs as numbers only, so a
// name is an error wrapping errors.ErrUnsupported.
func parseUser(u string) (uid, gid int64, err error) {
	if u == "" {
		return -1, -1, nil
	}
	us, gs, hasGroup := strings.Cut(u, ":")
	uid, err = strconv.ParseInt(us, 10, 32)
	if err == nil && hasGroup {
		gid, err = strconv.ParseInt(gs, 10, 32)
	} else if err == nil {
		gid = uid
	}
	if err != nil || uid < 0 || gid < 0 {
		return 0, 0, fmt.Errorf("k8s: user %q: a pod runs as a numeric uid[:gid] only: %w", u, errors.ErrUnsupported)
	}
	return uid, gid, nil
}

// podFor returns the pod of spec.
func (e *Engine) podFor(spec *engine.Spec) (*corev1.Pod, error) {
	o := &e.opts
	if spec.Image == "" || len(spec.Command) == 0 || spec.Helper.Dir == "" || spec.Helper.Path == "" {
		return nil, fmt.Errorf("k8s: the spec needs an image, a command and the helper's place")
	}
	if spec.NetworkNone && !o.networkNoneOK {
		return nil, fmt.Errorf("k8s: no network (network mode none): a pod always has the cluster's network; isolate the namespace with a NetworkPolicy and use k8s.WithNetworkNoneAccepted: %w", errors.ErrUnsupported)
	}
	if spec.PidsLimit > 0 && !o.pidsLimitOK {
		return nil, fmt.Errorf("k8s: a pids limit of %d: a pod cannot set its own (the kubelet's podPidsLimit limits every pod); set it on the nodes and use k8s.WithPidsLimitAccepted: %w", spec.PidsLimit, errors.ErrUnsupported)
	}
	uid, gid, err := parseUser(spec.User)
	if err != nil {
		return nil, err
	}
	owner := ""
	if uid >= 0 {
		owner = fmt.Sprintf("%d:%d", uid, gid)
	}
	grace := int64(0)
	if spec.StopGrace > 0 {
		grace = int64(math.Ceil(spec.StopGrace.Seconds()))
	}
	no, yes := false, true
	mounts := []corev1.VolumeMount{{Name: volHelper, MountPath: spec.Helper.Dir}}
	vols := []corev1.Volume{{Name: volHelper, VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}}}
	// install DEST OWNER [DIR]: owner "" makes the dirs mode 1777.
	install := []string{helperimage.BinaryPath, "install", spec.Helper.Path, owner}
	initMounts := []corev1.VolumeMount{{Name: volHelper, MountPath: spec.Helper.Dir}}
	if wd := path.Clean(spec.WorkingDir); spec.WorkingDir != "" && wd != "/" && !contains(spec.ScratchDirs, wd) {
		// The working directory is an emptyDir owned by the user: a
		// container cannot make a directory of its image's owned by
		// someone else before it starts (runc makes it root's).
		// The init container makes the volume's subdirectory ws, owned by
		// the user (the volume's own root is root's).
		mounts = append(mounts, corev1.VolumeMount{Name: volWorkspace, MountPath: wd, SubPath: "ws"})
		vols = append(vols, corev1.Volume{Name: volWorkspace, VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}})
		initMounts = append(initMounts, corev1.VolumeMount{Name: volWorkspace, MountPath: initWorkspace})
		install = append(install, initWorkspace+"/ws")
	}
	for i, d := range spec.ScratchDirs {
		name := fmt.Sprintf("dockersandbox-scratch-%d", i)
		mounts = append(mounts, corev1.VolumeMount{Name: name, MountPath: d})
		vols = append(vols, corev1.Volume{Name: name, VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{Medium: corev1.StorageMediumMemory}}})
	}
	var env []corev1.EnvVar
	for _, kv := range spec.Env {
		k, v, _ := strings.Cut(kv, "=")
		env = append(env, corev1.EnvVar{Name: k, Value: v})
	}
	res := *o.resources.DeepCopy()
	if spec.Memory > 0 || spec.NanoCPUs > 0 {
		if res.Limits == nil {
			res.Limits = corev1.ResourceList{}
		}
		if spec.Memory > 0 {
			res.Limits[corev1.ResourceMemory] = *resource.NewQuantity(spec.Memory, resource.BinarySI)
		}
		if spec.NanoCPUs > 0 {
			res.Limits[corev1.ResourceCPU] = *resource.NewMilliQuantity(spec.NanoCPUs/1e6, resource.DecimalSI)
		}
	}
	sc := &corev1.SecurityContext{ReadOnlyRootFilesystem: &spec.ReadOnlyRootfs}
	if spec.NoNewPrivileges {
		sc.AllowPrivilegeEscalation = &no
	}
	if len(spec.CapDrop) > 0 {
		sc.Capabilities = &corev1.Capabilities{}
		for _, c := range spec.CapDrop {
			sc.Capabilities.Drop = append(sc.Capabilities.Drop, corev1.Capability(strings.TrimPrefix(strings.ToUpper(c), "CAP_")))
		}
	}
	// The init container runs as the sandbox's user when it is known (no
	// privilege needed: the helper and its dirs are the user's, as every
	// process in the pod is), else as the helper image's user, root.
	initSC := &corev1.SecurityContext{AllowPrivilegeEscalation: &no, ReadOnlyRootFilesystem: &yes,
		Capabilities: &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}}}
	if uid >= 0 {
		sc.RunAsUser, sc.RunAsGroup = &uid, &gid
		initSC.RunAsUser, initSC.RunAsGroup = &uid, &gid
	}
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{
			Namespace: o.namespace,
			Labels:    podLabels(spec.Labels, o.labels),
			Annotations: map[string]string{
				annLabels: encodeLabels(spec.Labels), annUser: spec.User, annWorkingDir: spec.WorkingDir,
				annHelper: spec.Helper.Path, annRemoveOnExit: strconv.FormatBool(spec.RemoveOnExit),
			},
		},
		Spec: corev1.PodSpec{
			RestartPolicy:                 corev1.RestartPolicyNever,
			AutomountServiceAccountToken:  &no,
			EnableServiceLinks:            &no,
			TerminationGracePeriodSeconds: &grace,
			ServiceAccountName:            o.serviceAccount,
			NodeSelector:                  o.nodeSelector,
			Tolerations:                   o.tolerations,
			SecurityContext:               o.podSecurity.DeepCopy(),
			InitContainers: []corev1.Container{{
				Name: InitContainerName, Image: o.helperImage, ImagePullPolicy: o.pullPolicy,
				Command: install, VolumeMounts: initMounts, SecurityContext: initSC,
				TerminationMessagePolicy: corev1.TerminationMessageFallbackToLogsOnError,
			}},
			Containers: []corev1.Container{{
				Name: ContainerName, Image: spec.Image, ImagePullPolicy: o.pullPolicy,
				Command: spec.Command, Args: []string{}, Env: env, WorkingDir: spec.WorkingDir,
				VolumeMounts: mounts, Resources: res, SecurityContext: sc,
			}},
			Volumes: vols,
		},
	}
	if o.runtimeClass != "" {
		pod.Spec.RuntimeClassName = &o.runtimeClass
	}
	if spec.Name != "" {
		pod.Name = spec.Name
	} else {
		pod.Name = newName()
	}
	for _, fn := range o.editPod {
		fn(pod)
	}
	return pod, nil
}

// newName returns a pod name: "sbx-" and 8 random characters of
// [a-z0-9] (41 bits). Twelve characters in all: the library shows a
// sandbox's ID cut to 12 (a Docker short ID), so a longer name would not
// find the pod again.
func newName() string {
	const chars = "abcdefghijklmnopqrstuvwxyz0123456789"
	b := make([]byte, 8)
	_, _ = rand.Read(b)
	for i := range b {
		b[i] = chars[int(b[i])%len(chars)]
	}
	return "sbx-" + string(b)
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if path.Clean(x) == s {
			return true
		}
	}
	return false
}
