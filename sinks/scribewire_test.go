package sinks

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"io"
	"net"
	"reflect"
	"strings"
	"testing"

	"github.com/apache/thrift/lib/go/thrift"

	"github.com/ardea-dev/ardea/sinks/internal/scribe"
)

// thriftFrame is the frame Thrift's own code writes for a message: the
// binary protocol over a framed transport, into memory.
func thriftFrame(t *testing.T, name string, typ thrift.TMessageType, seq int32, body thrift.TStruct) []byte {
	t.Helper()
	ctx := context.Background()
	mem := thrift.NewTMemoryBuffer()
	cfg := &thrift.TConfiguration{}
	p := thrift.NewTBinaryProtocolConf(thrift.NewTFramedTransportConf(mem, cfg), cfg)
	if err := p.WriteMessageBegin(ctx, name, typ, seq); err != nil {
		t.Fatal(err)
	}
	if err := body.Write(ctx, p); err != nil {
		t.Fatal(err)
	}
	if err := p.WriteMessageEnd(ctx); err != nil {
		t.Fatal(err)
	}
	if err := p.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	return mem.Bytes()
}

func thriftEntries(es []ScribeEntry) []*scribe.LogEntry {
	out := make([]*scribe.LogEntry, len(es))
	for i, e := range es {
		out[i] = &scribe.LogEntry{Category: e.Category, Message: e.Message}
	}
	return out
}

var scribeWireCases = map[string][]ScribeEntry{
	"none":  {},
	"one":   {{Category: "ardea", Message: `{"name":"x","value":1}`}},
	"empty": {{}, {Category: "c"}, {Message: "m"}},
	"utf8":  {{Category: "héron", Message: "ünïcode ✓"}},
	"long":  {{Category: "ardea", Message: strings.Repeat("0123456789", 10_000)}},
}

// TestScribeWireCallMatchesThrift: the Log call Ardea writes is byte for
// byte the one Thrift's generated client writes, and Ardea reads Thrift's
// back to the same entries.
func TestScribeWireCallMatchesThrift(t *testing.T) {
	for name, es := range scribeWireCases {
		t.Run(name, func(t *testing.T) {
			want := thriftFrame(t, "Log", thrift.CALL, 7, &scribe.ScribeLogArgs{Messages: thriftEntries(es)})
			got := appendScribeLogCall(nil, 7, es)
			if !bytes.Equal(got, want) {
				t.Fatalf("Ardea's call differs from Thrift's:\n got %x\nwant %x", head(got), head(want))
			}
			seq, back, err := parseScribeLogCall(want[4:])
			if err != nil {
				t.Fatal(err)
			}
			if seq != 7 || len(back) != len(es) || (len(es) > 0 && !reflect.DeepEqual(back, es)) {
				t.Errorf("read back seq %d, %d entries; want 7, %v", seq, len(back), es)
			}
		})
	}
}

func head(b []byte) []byte { return b[:min(len(b), 64)] }

// TestScribeWireReplyMatchesThrift: the answers Ardea's server writes are
// Thrift's, and the sink reads Thrift's answers, exceptions included.
func TestScribeWireReplyMatchesThrift(t *testing.T) {
	for _, rc := range []scribe.ResultCode{scribe.ResultCode_OK, scribe.ResultCode_TRY_LATER} {
		want := thriftFrame(t, "Log", thrift.REPLY, 42, &scribe.ScribeLogResult{Success: &rc})
		if got := appendScribeLogReply(nil, 42, scribeResult(rc)); !bytes.Equal(got, want) {
			t.Errorf("reply %v: got %x, want %x", rc, got, want)
		}
		got, err := parseScribeLogReply(want[4:], 42)
		if err != nil || got != scribeResult(rc) {
			t.Errorf("read reply %v: %v, %v", rc, got, err)
		}
	}
	exc := thrift.NewTApplicationException(thrift.INTERNAL_ERROR, "handler failed")
	want := thriftFrame(t, "Log", thrift.EXCEPTION, 3, exc)
	if got := appendThriftException(nil, "Log", 3, thrift.INTERNAL_ERROR, "handler failed"); !bytes.Equal(got, want) {
		t.Errorf("exception: got %x, want %x", got, want)
	}
	_, err := parseScribeLogReply(want[4:], 3)
	if err == nil || !strings.Contains(err.Error(), "exception type 6") || !strings.Contains(err.Error(), "handler failed") {
		t.Errorf("read exception: %v", err)
	}
}

// TestScribeWireRefusesBadMessages: each malformed message gets an error
// saying what is wrong, never a panic or a huge allocation.
func TestScribeWireRefusesBadMessages(t *testing.T) {
	call := appendScribeLogCall(nil, 1, scribeWireCases["one"])[4:]
	reply := appendScribeLogReply(nil, 5, scribeOK)[4:]
	patch := func(b []byte, at int, v ...byte) []byte {
		b = bytes.Clone(b)
		copy(b[at:], v)
		return b
	}
	// Offsets: version 0-3, name length 4-7, "Log" 8-10, seq 11-14, then
	// the field header 15-17 (type, id), the list's element type 18 and
	// size 19-22.
	calls := map[string]struct {
		msg  []byte
		want string
	}{
		"truncated":    {call[:len(call)-3], "message ends early"},
		"bad version":  {patch(call, 0, 0x80, 0x02), "bad protocol version"},
		"a reply":      {patch(call, 3, thriftReply), "message type 2, want a call"},
		"other method": {patch(call, 8, 'G', 'o', 'g'), `unknown method "Gog"`},
		"huge list":    {patch(call, 19, 0x7f, 0xff, 0xff, 0xff), "collection of 2147483647 elements"},
		"list of i32":  {patch(call, 18, thriftI32), "list of type 8, want LogEntry structs"},
		"bad string":   {patch(call, 4, 0xff, 0xff, 0xff, 0xfe), "negative string length"},
		"deep nesting": {deepCall(), "nested deeper than 64"},
		"unknown type": {patch(call, 15, 99), "unknown field type 99"},
	}
	for name, c := range calls {
		_, _, err := parseScribeLogCall(c.msg)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("call %s: %v, want an error containing %q", name, err, c.want)
		}
	}
	replies := map[string]struct {
		msg  []byte
		want string
	}{
		"other call":     {reply, "to call 5, want 6"},
		"truncated":      {reply[:len(reply)-2], "message ends early"},
		"no result code": {patch(reply, 15, thriftStop), "no result code"},
		"a call":         {patch(reply, 3, thriftCall), "message type 1, want a reply"},
	}
	for name, c := range replies {
		_, err := parseScribeLogReply(c.msg, 6)
		if name != "other call" {
			_, err = parseScribeLogReply(c.msg, 5)
		}
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("reply %s: %v, want an error containing %q", name, err, c.want)
		}
	}
	big := binary.BigEndian.AppendUint32(nil, scribeMaxReplyFrame+1)
	if _, err := readScribeFrame(bytes.NewReader(big), nil, scribeMaxReplyFrame); err == nil ||
		!strings.Contains(err.Error(), "frame of 1048577 bytes exceeds the limit of 1048576") {
		t.Errorf("oversized frame: %v", err)
	}
	short := append(binary.BigEndian.AppendUint32(nil, 10), 1, 2)
	if _, err := readScribeFrame(bytes.NewReader(short), nil, 100); !errors.Is(err, io.ErrUnexpectedEOF) {
		t.Errorf("short frame: %v", err)
	}
}

// deepCall is a Log call whose args hold an unknown field of 100 nested
// lists.
func deepCall() []byte {
	b := appendThriftMessageBegin(nil, "Log", thriftCall, 1)
	b = appendThriftField(b, thriftList, 9)
	for range 100 {
		b = append(b, thriftList, 0, 0, 0, 1)
	}
	return b
}

// TestServeScribeAnswersThriftClient: Ardea's Scribe server answers
// Thrift's generated client, refuses another method with Thrift's
// UNKNOWN_METHOD and keeps the connection, and drops a connection that
// sends an oversized frame.
func TestServeScribeAnswersThriftClient(t *testing.T) {
	var calls [][]ScribeEntry
	stop, bound, err := ServeScribe("127.0.0.1:0", func(es []ScribeEntry) bool {
		calls = append(calls, es) // one connection: calls are serial
		return len(calls) > 1
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(stop)
	ctx := context.Background()
	cfg := &thrift.TConfiguration{}
	trans := thrift.NewTFramedTransportConf(thrift.NewTSocketConf(bound, cfg), cfg)
	if err := trans.Open(); err != nil {
		t.Fatal(err)
	}
	defer trans.Close()
	pf := thrift.NewTBinaryProtocolFactoryConf(cfg)
	c := scribe.NewScribeClientFactory(trans, pf)
	es := scribeWireCases["empty"]
	if rc, err := c.Log(ctx, thriftEntries(es)); err != nil || rc != scribe.ResultCode_TRY_LATER {
		t.Fatalf("first Log: %v, %v; want TRY_LATER", rc, err)
	}
	std := thrift.NewTStandardClient(pf.GetProtocol(trans), pf.GetProtocol(trans))
	_, err = std.Call(ctx, "Other", scribe.NewScribeLogArgs(), &scribe.ScribeLogResult{})
	var ae thrift.TApplicationException
	if !errors.As(err, &ae) || ae.TypeId() != thrift.UNKNOWN_METHOD || !strings.Contains(ae.Error(), `"Other"`) {
		t.Fatalf("another method: %v, want UNKNOWN_METHOD", err)
	}
	if rc, err := c.Log(ctx, thriftEntries(scribeWireCases["utf8"])); err != nil || rc != scribe.ResultCode_OK {
		t.Fatalf("Log after an unknown method: %v, %v; want OK", rc, err)
	}
	if want := [][]ScribeEntry{es, scribeWireCases["utf8"]}; !reflect.DeepEqual(calls, want) {
		t.Errorf("server heard %v, want %v", calls, want)
	}

	raw, err := net.Dial("tcp", bound)
	if err != nil {
		t.Fatal(err)
	}
	defer raw.Close()
	if _, err := raw.Write(binary.BigEndian.AppendUint32(nil, scribeMaxCallFrame+1)); err != nil {
		t.Fatal(err)
	}
	if n, err := raw.Read(make([]byte, 1)); err == nil {
		t.Errorf("an oversized frame got %d bytes back; want the connection closed", n)
	}
}

// FuzzScribeWire: the decoders never panic, and a call that decodes
// encodes to a message that decodes to the same entries.
func FuzzScribeWire(f *testing.F) {
	for _, es := range scribeWireCases {
		f.Add(appendScribeLogCall(nil, 1, es)[4:])
	}
	f.Add(appendScribeLogReply(nil, 1, scribeTryLater)[4:])
	f.Add(appendThriftException(nil, "Log", 1, 6, "x")[4:])
	f.Add(deepCall())
	f.Fuzz(func(t *testing.T, msg []byte) {
		_, _ = parseScribeLogReply(msg, 1)
		seq, es, err := parseScribeLogCall(msg)
		if err != nil {
			return
		}
		seq2, es2, err := parseScribeLogCall(appendScribeLogCall(nil, seq, es)[4:])
		if err != nil || seq2 != seq || len(es2) != len(es) || (len(es) > 0 && !reflect.DeepEqual(es, es2)) {
			t.Fatalf("round trip: %v, seq %d/%d, %d/%d entries", err, seq, seq2, len(es), len(es2))
		}
	})
}
