package k8s

import (
	"encoding/json"
	"strings"

	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/validation"
)

// What the engine keeps on each pod besides the sandbox's labels.
const (
	// LabelManaged marks the engine's pods (value "true"); List selects by it.
	LabelManaged = "dockersandbox.com/sandbox"
	// annLabels holds the sandbox's labels as JSON: a Kubernetes label
	// value may not hold what a sandbox label may (a time, a path), so
	// the annotation is the truth and the labels a selector for List.
	annLabels = "dockersandbox.com/labels"
	// annUser, annWorkingDir, annHelper, annRemoveOnExit: the Spec's.
	annUser         = "dockersandbox.com/user"
	annWorkingDir   = "dockersandbox.com/working-dir"
	annHelper       = "dockersandbox.com/helper"
	annRemoveOnExit = "dockersandbox.com/remove-on-exit"
)

// podLabels returns the Kubernetes labels of a pod for the sandbox labels
// l: each one whose key is a valid label key, with its value, or with ""
// when the value is not a valid label value (List then selects by the key
// and compares the value from the annotation).
func podLabels(l map[string]string, extra map[string]string) map[string]string {
	out := map[string]string{LabelManaged: "true"}
	for k, v := range extra {
		out[k] = v
	}
	for k, v := range l {
		if len(validation.IsQualifiedName(k)) != 0 {
			continue
		}
		if len(validation.IsValidLabelValue(v)) != 0 {
			v = ""
		}
		out[k] = v
	}
	return out
}

// selector returns the label selector that finds at least every pod whose
// sandbox labels match want (the caller filters on the annotation).
func selector(want map[string]string) string {
	parts := []string{LabelManaged + "=true"}
	for k, v := range want {
		if len(validation.IsQualifiedName(k)) != 0 {
			continue // filtered from the annotation only
		}
		if v == "" || len(validation.IsValidLabelValue(v)) != 0 {
			parts = append(parts, k)
		} else {
			parts = append(parts, k+"="+v)
		}
	}
	sel, err := labels.Parse(strings.Join(parts, ","))
	if err != nil {
		return LabelManaged + "=true"
	}
	return sel.String()
}

// matches reports whether the sandbox labels have every one of want ("":
// the key whatever its value).
func matches(have, want map[string]string) bool {
	for k, v := range want {
		hv, ok := have[k]
		if !ok || (v != "" && hv != v) {
			return false
		}
	}
	return true
}

func encodeLabels(l map[string]string) string {
	b, _ := json.Marshal(l)
	return string(b)
}

func decodeLabels(s string) map[string]string {
	l := map[string]string{}
	_ = json.Unmarshal([]byte(s), &l)
	return l
}
