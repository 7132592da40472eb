package tuple

// Fields grouping and host-side state share one hash so that a key's state
// can move with the key when a component is rescaled:
//
//	hash(tuple)     = FNV-1a 64 over the payloads of the grouping fields in
//	                  order, with one 0x00 byte between consecutive fields
//	hash(state key) = FNV-1a 64 over the key's bytes before its first 0x1F
//	                  byte (the whole key if it has none)
//	key group       = hash mod maxKeyGroups
//	task index      = keyGroup * parallelism / maxKeyGroups
//
// A bolt whose state key for a tuple is the grouping field's payload (for a
// string field, its UTF-8 bytes; int64/float64 8 bytes LE; bool 1 byte),
// optionally followed by 0x1F and any suffix, keeps its state in the key
// group its tuples are routed to. Payloads are the field bytes without tag or
// length prefix.

const (
	fnvOffset = 14695981039346656037
	fnvPrime  = 1099511628211
)

// DefaultMaxKeyGroups is the default number of key groups per component (the
// upper bound of its parallelism).
const DefaultMaxKeyGroups = 256

// HashBytes is FNV-1a 64 over b, continuing from h (start with HashSeed).
func HashBytes(h uint64, b []byte) uint64 {
	for _, c := range b {
		h ^= uint64(c)
		h *= fnvPrime
	}
	return h
}

// HashSeed is the initial value for HashBytes.
const HashSeed uint64 = fnvOffset

// HashFields hashes the grouping fields of a values block whose payload spans
// come from FieldSpans. idx lists the grouping field positions.
func HashFields(values []byte, spans []int, idx []int) uint64 {
	h := HashSeed
	for i, f := range idx {
		if i > 0 {
			h = HashBytes(h, []byte{0})
		}
		h = HashBytes(h, values[spans[2*f]:spans[2*f+1]])
	}
	return h
}

// StateKeyHash hashes a state key by the rule above.
func StateKeyHash(key []byte) uint64 {
	for i, c := range key {
		if c == 0x1F {
			key = key[:i]
			break
		}
	}
	return HashBytes(HashSeed, key)
}

// KeyGroup maps a hash to a key group.
func KeyGroup(h uint64, maxKeyGroups int) int { return int(h % uint64(maxKeyGroups)) }

// TaskIndexForKeyGroup maps a key group to a task index (contiguous ranges).
func TaskIndexForKeyGroup(kg, maxKeyGroups, parallelism int) int {
	return kg * parallelism / maxKeyGroups
}
