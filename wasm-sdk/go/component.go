package ardea

import "strconv"

// Status is a spout's answer to Next.
type Status int32

const (
	// More: Next emitted zero or more tuples; call it again. The SDK calls
	// Next again within the same host call while it emits and the host's
	// budget (SpoutCollector.Remaining) is not used up.
	More Status = 0
	// Idle: nothing to emit now; the host backs off briefly.
	Idle Status = 1
	// Done: the input is exhausted; Next is never called again.
	Done Status = 2
)

func (s Status) String() string {
	switch s {
	case More:
		return "more"
	case Idle:
		return "idle"
	case Done:
		return "done"
	}
	return "status(" + strconv.Itoa(int(s)) + ")"
}

// Spout is a source. Embed BaseSpout and override what you need.
//
// Every method runs inside one host call; what it emits is sent when the
// call returns. Returning an error (or panicking) fails the task instance.
type Spout interface {
	// Open is called once before anything else.
	Open(ctx *Context) error
	// Next emits up to c.Remaining() tuples and says whether there is more.
	Next(c *SpoutCollector) (Status, error)
	// Ack is called when the tuple tree of an EmitWithID message id has been
	// fully processed; Fail when it failed or timed out. Both may emit
	// through a *SpoutCollector kept from Next (for example to replay).
	Ack(msgID uint64)
	Fail(msgID uint64)
	// Activate and Deactivate resume and pause emitting: Next is not called
	// while the spout is deactivated.
	Activate()
	Deactivate()
	// Close is called when the task stops. It may not emit.
	Close() error
}

// BaseSpout implements every Spout method as a no-op; Next reports Done.
type BaseSpout struct{}

func (BaseSpout) Open(*Context) error                  { return nil }
func (BaseSpout) Next(*SpoutCollector) (Status, error) { return Done, nil }
func (BaseSpout) Ack(uint64)                           {}
func (BaseSpout) Fail(uint64)                          {}
func (BaseSpout) Activate()                            {}
func (BaseSpout) Deactivate()                          {}
func (BaseSpout) Close() error                         { return nil }

// Bolt processes tuples. Embed BaseBolt and override what you need.
//
// An error returned by Execute, or a panic in it, fails that tuple: the
// SDK reports it (a panic with the file, line and function of the
// component's code) and the host, knowing the tuple from ardea_cursor,
// fails it by the topology's delivery mode and goes on with a fresh
// instance (host-side state kept; the instance's memory is not). Elsewhere
// an error or panic fails the instance. c.Fail(t) fails a tuple without
// either.
type Bolt interface {
	// Prepare is called once before anything else.
	Prepare(ctx *Context) error
	// Execute processes one input tuple. t and the slices it returns by
	// view are only valid during the call; keep t.Copy() to retain it.
	Execute(t Tuple, c *BoltCollector) error
	// Tick is called every topology.tick.tuple.freq.ms.
	Tick(c *BoltCollector) error
	// Finish is called once every upstream task has finished (finite
	// input); emit final results here.
	Finish(c *BoltCollector) error
	// Close is called when the task stops. It may not emit.
	Close() error
}

// BaseBolt implements every Bolt method as a no-op; Execute acks the tuple.
type BaseBolt struct{}

func (BaseBolt) Prepare(*Context) error { return nil }
func (BaseBolt) Execute(t Tuple, c *BoltCollector) error {
	c.Ack(t)
	return nil
}
func (BaseBolt) Tick(*BoltCollector) error   { return nil }
func (BaseBolt) Finish(*BoltCollector) error { return nil }
func (BaseBolt) Close() error                { return nil }

// RegisterSpout makes s this module's component. Call it from an init
// function: a module built with -buildmode=c-shared runs package
// initialization when the host instantiates it, but never runs main.
// A module registers exactly one component.
//
// The declarations (Emits, ConfigKeys) are optional: they go into the
// module's manifest (ardea build stores it; ardea run and submit check
// the topology against it, and a topology may then omit outputs:).
func RegisterSpout(s Spout, decls ...Declaration) {
	if s == nil {
		panic("ardea: RegisterSpout(nil)")
	}
	global.register(s, nil, decls)
}

// RegisterBolt makes b this module's component; see RegisterSpout. A
// bolt may also declare the input fields it reads by name (Reads).
//
//	func init() {
//		ardea.RegisterBolt(&split{},
//			ardea.Reads("line"),
//			ardea.Emits("default", "word"),
//			ardea.ConfigKeys("min_length"))
//	}
func RegisterBolt(b Bolt, decls ...Declaration) {
	if b == nil {
		panic("ardea: RegisterBolt(nil)")
	}
	global.register(nil, b, decls)
}
