package main

// `ardea logs` as text: the hosts write one JSON object a line (slog's
// JSON handler); people read "time LEVEL msg key=value ...".

import (
	"encoding/json"
	"io"
	"strconv"
	"strings"
	"time"
	"unicode"
)

// logField is one key of a log line, in the line's order. value is a
// string's text, or another value's JSON.
type logField struct{ key, value string }

// logRecord is a parsed log line.
type logRecord struct {
	time, level, msg string
	attrs            []logField
}

// parseLogLine parses a JSON object line, keeping its keys' order; ok is
// false for anything else (a Go panic's trace, a line a guest printed).
func parseLogLine(line string) (r logRecord, ok bool) {
	dec := json.NewDecoder(strings.NewReader(line))
	dec.UseNumber()
	if tok, err := dec.Token(); err != nil || tok != json.Delim('{') {
		return r, false
	}
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return r, false
		}
		key, isKey := tok.(string)
		if !isKey {
			return r, false
		}
		var raw json.RawMessage
		if err := dec.Decode(&raw); err != nil {
			return r, false
		}
		value := string(raw)
		if len(raw) > 0 && raw[0] == '"' {
			if err := json.Unmarshal(raw, &value); err != nil {
				return r, false
			}
		}
		switch key {
		case "time":
			r.time = value
		case "level":
			r.level = value
		case "msg":
			r.msg = value
		default:
			r.attrs = append(r.attrs, logField{key, value})
		}
	}
	if tok, err := dec.Token(); err != nil || tok != json.Delim('}') {
		return r, false
	}
	if _, err := dec.Token(); err != io.EOF {
		return r, false // something after the object
	}
	return r, true
}

// formatLogLine is a log line as "time LEVEL msg key=value ...". The
// topology (the command names it) is left out; an instance's component
// and task id are shown as instance=component/index when names (task id
// -> component/index) knows the task. A line that is not a JSON object is
// returned as it is.
func formatLogLine(line string, names map[string]string) string {
	r, ok := parseLogLine(line)
	if !ok {
		return line
	}
	var parts []string
	if r.time != "" {
		parts = append(parts, printable(logTime(r.time)))
	}
	if r.level != "" {
		parts = append(parts, padRight(printable(r.level), 5))
	}
	var b strings.Builder
	b.WriteString(strings.Join(parts, " "))
	if r.msg != "" {
		if b.Len() > 0 {
			b.WriteByte(' ')
		}
		b.WriteString(printable(r.msg))
	}
	inst := instanceOf(r.attrs, names)
	if inst != "" {
		b.WriteString(" instance=")
		b.WriteString(inst)
	}
	for _, f := range r.attrs {
		if f.key == "topology" || (inst != "" && (f.key == "component" || f.key == "task")) {
			continue
		}
		b.WriteByte(' ')
		b.WriteString(logValue(f.key))
		b.WriteByte('=')
		b.WriteString(logValue(f.value))
	}
	return strings.TrimSpace(b.String())
}

// instanceOf is the component/index of a line's task, if names has it
// and the line's component agrees.
func instanceOf(attrs []logField, names map[string]string) string {
	var comp, task string
	for _, f := range attrs {
		switch f.key {
		case "component":
			comp = f.value
		case "task":
			task = f.value
		}
	}
	inst, ok := names[task]
	if !ok || comp == "" || !strings.HasPrefix(inst, comp+"/") {
		return ""
	}
	return inst
}

// logTime is slog's RFC 3339 time to the millisecond, in the zone it
// was written in; another text is kept as it is.
func logTime(s string) string {
	t, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		return s
	}
	return t.Format("2006-01-02 15:04:05.000")
}

func padRight(s string, n int) string {
	if len(s) >= n {
		return s
	}
	return s + strings.Repeat(" ", n-len(s))
}

// printable quotes a text that holds a line break or another character
// that is not printable, so one record stays one line.
func printable(s string) string {
	for _, c := range s {
		if c != '\t' && !unicode.IsPrint(c) {
			return strconv.Quote(s)
		}
	}
	return s
}

// logValue quotes a value that would not read back as one word.
func logValue(s string) string {
	if s == "" {
		return `""`
	}
	for _, c := range s {
		if c == '=' || c == '"' || unicode.IsSpace(c) || !unicode.IsPrint(c) {
			return strconv.Quote(s)
		}
	}
	return s
}
