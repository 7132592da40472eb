package connectors

import (
	"encoding/binary"
	"fmt"

	"github.com/ardea-dev/ardea/internal/component"
	"github.com/ardea-dev/ardea/internal/tuple"
)

// outputStream finds the index of stream among the task's declared outputs
// and checks that it has nfields fields.
func outputStream(ctx component.Context, kind, stream string, nfields int) (uint16, error) {
	for i, o := range ctx.Outputs {
		if o.Name != stream {
			continue
		}
		if len(o.Fields) != nfields {
			return 0, fmt.Errorf("component %q: the %s emits %d field(s) on stream %q, but the topology declares %d (%v)",
				ctx.Component, kind, nfields, stream, len(o.Fields), o.Fields)
		}
		return uint16(i), nil
	}
	return 0, fmt.Errorf("component %q: the %s emits on stream %q, which the topology does not declare", ctx.Component, kind, stream)
}

// appendStringValues appends a values block holding one string field.
func appendStringValues(dst, s []byte) []byte {
	dst = binary.LittleEndian.AppendUint16(dst, 1)
	dst = append(dst, byte(tuple.String))
	dst = binary.LittleEndian.AppendUint32(dst, uint32(len(s)))
	return append(dst, s...)
}

// taskOf returns a task's index and its component's parallelism (at least 1).
func taskOf(ctx component.Context) (index, parallelism int64) {
	p := int64(ctx.Parallelism)
	if p < 1 {
		p = 1
	}
	return int64(ctx.TaskIndex), p
}
