package kube

import (
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"strconv"
	"strings"
)

// The kubelet's log endpoint: what the API server proxies a Pod's log
// (pods/log: kubectl logs, client-go's GetLogs) to, at the Node's
// InternalIP (the API server runs with
// --kubelet-preferred-address-types=InternalIP: the Node's Hostname
// address resolves nowhere) and the port of its DaemonEndpoints. It
// serves GET /containerLogs/NAMESPACE/POD/CONTAINER from LogPath (the
// current or last run), with tailLines and limitBytes as the kubelet
// applies them (the last lines, then at most that many bytes from their
// start); follow, previous, sinceSeconds and timestamps are not
// honoured (previous is refused). TLS with a self-signed certificate,
// which the API server does not verify without
// --kubelet-certificate-authority; no client authentication (the API
// server has authorized the caller).

// serveLogs starts the endpoint; Stop closes it.
func (k *Kubelet) serveLogs() (port int, err error) {
	srv := httptest.NewUnstartedServer(http.HandlerFunc(k.containerLogs))
	ln, err := net.Listen("tcp", podIP+":0")
	if err != nil {
		return 0, err
	}
	srv.Listener.Close()
	srv.Listener = ln
	srv.StartTLS()
	k.logSrv = srv
	return ln.Addr().(*net.TCPAddr).Port, nil
}

func (k *Kubelet) containerLogs(w http.ResponseWriter, r *http.Request) {
	parts := strings.Split(strings.TrimPrefix(r.URL.Path, "/containerLogs/"), "/")
	if r.Method != http.MethodGet || !strings.HasPrefix(r.URL.Path, "/containerLogs/") || len(parts) != 3 {
		http.Error(w, "the test kubelet serves GET /containerLogs/NAMESPACE/POD/CONTAINER only", http.StatusNotFound)
		return
	}
	q := r.URL.Query()
	if q.Get("previous") == "true" {
		http.Error(w, "the test kubelet does not serve a previous run's log", http.StatusBadRequest)
		return
	}
	path := k.LogPath(parts[0], parts[1], parts[2])
	if path == "" {
		http.Error(w, "container "+parts[2]+" of pod "+parts[0]+"/"+parts[1]+" has not started on node "+k.name, http.StatusNotFound)
		return
	}
	b, err := os.ReadFile(path)
	if err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	if v := q.Get("tailLines"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 0 {
			http.Error(w, "tailLines "+v, http.StatusBadRequest)
			return
		}
		b = tailLines(b, n)
	}
	if v := q.Get("limitBytes"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 {
			http.Error(w, "limitBytes "+v, http.StatusBadRequest)
			return
		}
		b = b[:min(n, len(b))]
	}
	w.Header().Set("Content-Type", "text/plain")
	_, _ = w.Write(b)
}

// tailLines is the last n lines of b (a last line without a newline
// counts).
func tailLines(b []byte, n int) []byte {
	if n == 0 {
		return nil
	}
	end := len(b)
	if end > 0 && b[end-1] == '\n' {
		end--
	}
	i := end
	for ; i > 0 && n > 0; i-- {
		if b[i-1] == '\n' {
			n--
			if n == 0 {
				break
			}
		}
	}
	if n > 0 {
		return b
	}
	return b[i:]
}
