package sandbox

import (
	"os"
	"strconv"
	"time"
)

// Labels on every container the library creates, so that leaked ones can
// be found (docker ps --filter label=com.dockersandbox.sandbox).
const (
	labelPrefix = "com.dockersandbox."
	// LabelSandbox marks a container as a sandbox; its value is "true".
	LabelSandbox = labelPrefix + "sandbox"
	// LabelCreated holds the creation time, RFC 3339 in UTC.
	LabelCreated = labelPrefix + "created"
	// LabelOwner holds "<hostname>:<pid>" of the process that created it.
	LabelOwner = labelPrefix + "owner"
	// LabelWorkingDir holds the sandbox's working directory.
	LabelWorkingDir = labelPrefix + "workdir"
)

func ownerLabel() string {
	host, _ := os.Hostname()
	return host + ":" + strconv.Itoa(os.Getpid())
}

// createdAt reads a container's creation label; ok is false when it is
// missing or unreadable.
func createdAt(labels map[string]string) (t time.Time, ok bool) {
	t, err := time.Parse(time.RFC3339, labels[LabelCreated])
	return t, err == nil
}

func (o *options) containerLabels(now time.Time) map[string]string {
	l := map[string]string{}
	for k, v := range o.labels {
		l[k] = v
	}
	l[LabelSandbox] = "true"
	l[LabelCreated] = now.UTC().Format(time.RFC3339)
	l[LabelOwner] = ownerLabel()
	if o.owner != "" {
		l[LabelOwner] = o.owner
	}
	return l
}
