package host

import (
	"fmt"
	"strconv"
	"strings"
)

// A trap's report points at the user's code: wazero's wasm stack trace
// names each frame from the module's name section (the SDKs' builds keep
// it) and, where the module has DWARF, adds the frame's file:line. foldTrace
// rewrites that trace so it reads as the user's code: Rust's mangled names
// are demangled, and each run of frames of the SDKs and the languages'
// runtimes (Go's runtime, Rust's std/core/alloc and the ardea crate, the C
// SDK and wasi-libc, AssemblyScript's ~lib) becomes one line, "... 7
// SDK/runtime frames".

const traceHeader = "\nwasm stack trace:\n"

// foldTrace rewrites the wasm stack trace in msg (if any).
func foldTrace(msg string) string {
	i := strings.Index(msg, traceHeader)
	if i < 0 {
		return msg
	}
	head, body := msg[:i+len(traceHeader)], msg[i+len(traceHeader):]
	// The trace is the lines starting with a tab; whatever follows (a Go
	// runtime trace after a blank line) is kept as it is.
	end := len(body)
	for off := 0; off < len(body); {
		nl := strings.IndexByte(body[off:], '\n')
		line := body[off:]
		if nl >= 0 {
			line = body[off : off+nl]
		}
		if !strings.HasPrefix(line, "\t") {
			end = off
			break
		}
		if nl < 0 {
			break
		}
		off += nl + 1
	}
	trace, rest := body[:end], body[end:]
	var sb strings.Builder
	sb.WriteString(head)
	folded := 0
	flush := func() {
		if folded > 0 {
			fmt.Fprintf(&sb, "\t... %d SDK/runtime frame%s\n", folded, plural(folded))
			folded = 0
		}
	}
	skip := false // the source lines of a folded frame
	for _, line := range strings.Split(strings.TrimSuffix(trace, "\n"), "\n") {
		if strings.HasPrefix(line, "\t\t") || line == "" {
			if !skip && line != "" {
				sb.WriteString(line + "\n")
			}
			continue
		}
		frame := strings.TrimPrefix(line[1:], ".")
		name, sig := splitSig(frame)
		name = demangleRust(name)
		if sdkFrame(name) {
			folded++
			skip = true
			continue
		}
		flush()
		skip = false
		sb.WriteString("\t" + name + sig + "\n")
	}
	flush()
	out := strings.TrimSuffix(sb.String(), "\n")
	if rest != "" {
		out += "\n" + rest
	} else if strings.HasSuffix(trace, "\n") {
		out += "\n"
	}
	return out
}

func plural(n int) string {
	if n == 1 {
		return ""
	}
	return "s"
}

// splitSig splits "name(i32,i32) i32" into the name and its signature.
func splitSig(frame string) (string, string) {
	if strings.HasPrefix(frame, "... ") {
		return frame, ""
	}
	// The parameter list is the last parenthesised group of wasm types.
	if i := strings.LastIndex(frame, "("); i > 0 && strings.Contains(frame[i:], ")") {
		return frame[:i], frame[i:]
	}
	return frame, ""
}

// sdkPrefixes start the names of frames that belong to an SDK or a
// language runtime, after demangling.
var sdkPrefixes = []string{
	// Go: the runtime and its internals, the SDK (Go writes a package
	// path with '/', '-' and '.' as '_' in the name section), export glue.
	"runtime.", "internal/", "internal_", "syscall.", "sync.", "sync/", "reflect.", "fmt.", "strconv.",
	"github.com_ardea_dev_ardea_wasm_sdk_go", "github.com/ardea-dev/ardea/wasm-sdk/go",
	"_rt0_", "wasm_export_", "wasm_pc_f_loop", "gcWriteBarrier", "runtime_", "callRet", "memeqbody", "cmpbody",
	// Rust: std, core, alloc, the SDK crate, the panic machinery.
	"std::", "core::", "alloc::", "ardea::", "__rust", "rust_panic", "rust_begin_unwind", "__rdl_", "__rg_", "dlmalloc::",
	// C: the SDK (every symbol starts with ardea_) and wasi-libc.
	"ardea_", "__", "abort", "malloc", "free", "calloc", "realloc", "dlmalloc", "dlfree", "sbrk", "memcpy",
	"memmove", "memset", "memcmp", "strlen", "vsnprintf", "snprintf", "vfprintf", "printf", "fwrite", "fputs",
	"exit", "_Exit", "printf_core",
	// AssemblyScript: the standard library and the SDK (both in ~lib).
	"~lib/", "~start", "start:~lib",
}

func sdkFrame(name string) bool {
	if name == "" || strings.HasPrefix(name, "$") {
		return false // unnamed: nothing to say whose it is
	}
	if strings.HasPrefix(name, "<") {
		// "<T as Trait>::method": whose T is.
		t := strings.TrimPrefix(name, "<")
		t = strings.TrimPrefix(strings.TrimPrefix(t, "&mut "), "&")
		return hasSDKPrefix(t)
	}
	return hasSDKPrefix(name)
}

func hasSDKPrefix(name string) bool {
	for _, p := range sdkPrefixes {
		if strings.HasPrefix(name, p) {
			if p == "exit" || p == "abort" || p == "free" || p == "malloc" {
				return name == p // short libc names: only exactly
			}
			return true
		}
	}
	return false
}

// demangleRust demangles a Rust legacy symbol (_ZN...E, as Debian's rustc
// writes them into the name section); any other name is returned as is.
func demangleRust(s string) string {
	if !strings.HasPrefix(s, "_ZN") || !strings.HasSuffix(s, "E") {
		return s
	}
	b := s[3 : len(s)-1]
	var parts []string
	for len(b) > 0 {
		j := 0
		for j < len(b) && b[j] >= '0' && b[j] <= '9' {
			j++
		}
		n, err := strconv.Atoi(b[:j])
		if j == 0 || err != nil || j+n > len(b) {
			return s
		}
		parts = append(parts, b[j:j+n])
		b = b[j+n:]
	}
	if k := len(parts) - 1; k > 0 && len(parts[k]) == 17 && parts[k][0] == 'h' {
		parts = parts[:k] // the hash
	}
	for i, p := range parts {
		parts[i] = unescapeRust(p)
	}
	return strings.Join(parts, "::")
}

var rustEscapes = strings.NewReplacer(
	"$SP$", "@", "$BP$", "*", "$RF$", "&", "$LT$", "<", "$GT$", ">", "$LP$", "(", "$RP$", ")", "$C$", ",",
	"..", "::", "$u7e$", "~", "$u20$", " ", "$u27$", "'", "$u5b$", "[", "$u5d$", "]", "$u7b$", "{", "$u7d$", "}",
	"$u3b$", ";", "$u2b$", "+", "$u22$", "\"",
)

func unescapeRust(p string) string {
	if strings.HasPrefix(p, "_$") {
		p = p[1:] // a '_' before a leading '$'
	}
	return rustEscapes.Replace(p)
}
