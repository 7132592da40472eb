package ardea

// Builder assembles a Topology in code; it produces exactly what LoadFile
// produces for the equivalent YAML (defaults applied: parallelism 1, stream
// "default", grouping "shuffle", non-nil Config maps).
//
//	b := ardea.NewBuilder("wordcount")
//	b.Spout("lines", "builtin:file").Config("path", "input.txt")
//	b.Bolt("split", "split").Parallelism(2).Shuffle("lines").Output("default", "word")
//	b.Bolt("count", "count").Fields("split", "word").Output("default", "word", "count")
//	t, err := b.Build()
type Builder struct {
	t *Topology
}

// ComponentBuilder configures one component; its methods chain.
type ComponentBuilder struct {
	c *Component
}

// NewBuilder starts a topology.
func NewBuilder(name string) *Builder {
	return &Builder{t: &Topology{Name: name, Config: map[string]string{}}}
}

// Dir sets the directory relative module paths are resolved against.
func (b *Builder) Dir(dir string) *Builder {
	b.t.Dir = dir
	return b
}

// Set sets a topology-level setting (keys start with "topology.").
func (b *Builder) Set(key, value string) *Builder {
	b.t.Config[key] = value
	return b
}

// Spout adds a spout.
func (b *Builder) Spout(name, module string) *ComponentBuilder { return b.add(name, Spout, module) }

// Bolt adds a bolt.
func (b *Builder) Bolt(name, module string) *ComponentBuilder { return b.add(name, Bolt, module) }

func (b *Builder) add(name string, kind Kind, module string) *ComponentBuilder {
	c := &Component{Name: name, Kind: kind, Module: module, Parallelism: 1, Config: map[string]string{}}
	b.t.Components = append(b.t.Components, c)
	return &ComponentBuilder{c: c}
}

// Build validates the topology (ValidateOptions{}: module files are checked,
// builtins are not) and returns a copy of it.
func (b *Builder) Build() (*Topology, error) { return b.BuildWith(ValidateOptions{}) }

// BuildWith is Build with explicit validation options. Builtin outputs are
// applied from opts.Builtins first.
func (b *Builder) BuildWith(opts ValidateOptions) (*Topology, error) {
	t := b.t.Clone()
	t.ApplyBuiltinOutputs(opts.Builtins)
	if err := t.Validate(opts); err != nil {
		return nil, err
	}
	return t, nil
}

// Parallelism sets the number of tasks.
func (cb *ComponentBuilder) Parallelism(n int) *ComponentBuilder {
	cb.c.Parallelism = n
	return cb
}

// Config sets a component config key.
func (cb *ComponentBuilder) Config(key, value string) *ComponentBuilder {
	cb.c.Config[key] = value
	return cb
}

// Output declares an output stream and its fields.
func (cb *ComponentBuilder) Output(stream string, fields ...string) *ComponentBuilder {
	if cb.c.Outputs == nil {
		cb.c.Outputs = map[string][]string{}
	}
	if fields == nil {
		fields = []string{}
	}
	cb.c.Outputs[stream] = fields
	return cb
}

// NoOutputs declares that the component emits nothing (so a builtin's
// outputs are not filled in).
func (cb *ComponentBuilder) NoOutputs() *ComponentBuilder {
	cb.c.Outputs = map[string][]string{}
	return cb
}

// Input adds a subscription; empty Stream and Grouping get their defaults.
func (cb *ComponentBuilder) Input(in Input) *ComponentBuilder {
	if in.Stream == "" {
		in.Stream = DefaultStream
	}
	if in.Grouping == "" {
		in.Grouping = GroupingShuffle
	}
	cb.c.Inputs = append(cb.c.Inputs, in)
	return cb
}

func (cb *ComponentBuilder) group(from, grouping string, fields []string) *ComponentBuilder {
	return cb.Input(Input{From: from, Grouping: grouping, Fields: fields})
}

// Shuffle subscribes to from's default stream with shuffle grouping.
func (cb *ComponentBuilder) Shuffle(from string) *ComponentBuilder {
	return cb.group(from, GroupingShuffle, nil)
}

// Fields subscribes to from's default stream with fields grouping.
func (cb *ComponentBuilder) Fields(from string, fields ...string) *ComponentBuilder {
	return cb.group(from, GroupingFields, fields)
}

// All subscribes with all grouping (every task gets every tuple).
func (cb *ComponentBuilder) All(from string) *ComponentBuilder {
	return cb.group(from, GroupingAll, nil)
}

// Global subscribes with global grouping (the lowest task gets everything).
func (cb *ComponentBuilder) Global(from string) *ComponentBuilder {
	return cb.group(from, GroupingGlobal, nil)
}

// Direct subscribes with direct grouping (the emitter picks the task).
func (cb *ComponentBuilder) Direct(from string) *ComponentBuilder {
	return cb.group(from, GroupingDirect, nil)
}

// LocalOrShuffle subscribes preferring tasks in the same container.
func (cb *ComponentBuilder) LocalOrShuffle(from string) *ComponentBuilder {
	return cb.group(from, GroupingLocalOrShuffle, nil)
}

// None subscribes with none grouping (same as shuffle).
func (cb *ComponentBuilder) None(from string) *ComponentBuilder {
	return cb.group(from, GroupingNone, nil)
}

// Stream subscribes to a named stream of from with the given grouping and
// grouping fields.
func (cb *ComponentBuilder) Stream(from, stream, grouping string, fields ...string) *ComponentBuilder {
	return cb.Input(Input{From: from, Stream: stream, Grouping: grouping, Fields: fields})
}
