package helper

import (
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/dockersandbox/sandbox/internal/proto"
)

// The dispatch table has a row for every operation of the protocol's table
// (which has one for every Op constant), and no other; PID 1 runs every
// process operation.
func TestDispatchTableCoversEveryOp(t *testing.T) {
	spec := map[string]bool{}
	for _, s := range proto.Ops() {
		spec[s.Op] = true
		o, ok := ops[s.Op]
		if !assert.True(t, ok, "%s has no row in the dispatch table", s.Op) {
			continue
		}
		assert.NotNil(t, o.validate, s.Op)
		assert.NotNil(t, o.handle, s.Op)
		assert.Equal(t, s.Process && s.Op != proto.OpProcStart, o.table != nil, "%s: PID 1 runs it from the table", s.Op)
	}
	for name := range ops {
		assert.True(t, spec[name], "%s is dispatched but not in proto.Ops", name)
	}
}
