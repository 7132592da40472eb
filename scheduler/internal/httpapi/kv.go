package httpapi

import (
	"net/http"
	"strconv"

	"github.com/ardea-dev/ardea/internal/audit"
	"github.com/ardea-dev/ardea/scheduler/api"
)

// The caller's tenant KV buckets (the backend's Buckets).
func (h *Handler) kvRoutes(mux *http.ServeMux) {
	mux.HandleFunc("GET /api/v1/kv", h.kvList)
	mux.HandleFunc("POST /api/v1/kv", h.kvCreate)
	mux.HandleFunc("GET /api/v1/kv/{bucket}", h.kvInfo)
	mux.HandleFunc("DELETE /api/v1/kv/{bucket}", h.kvDelete)
	mux.HandleFunc("GET /api/v1/kv/{bucket}/keys", h.kvKeys)
	// A key is a query parameter (?key=K), not a path segment: keys may
	// hold '/', which the guard refuses in a path's names.
	mux.HandleFunc("GET /api/v1/kv/{bucket}/value", h.kvGet)
	mux.HandleFunc("PUT /api/v1/kv/{bucket}/value", h.kvPut)
	mux.HandleFunc("DELETE /api/v1/kv/{bucket}/value", h.kvDeleteKey)
}

func (h *Handler) kvList(w http.ResponseWriter, r *http.Request) {
	out, err := h.buckets.ListKV(r.Context())
	h.reply(w, http.StatusOK, out, err)
}

func (h *Handler) kvCreate(w http.ResponseWriter, r *http.Request) {
	var req api.CreateKVRequest
	if !decode(w, r, &req) {
		return
	}
	audit.SetCall(r.Context(), audit.ActionKVCreate, req.Name)
	audit.Param(r.Context(), "history", req.History)
	audit.Param(r.Context(), "max_bytes", req.MaxBytes)
	out, err := h.buckets.CreateKV(r.Context(), req)
	h.reply(w, http.StatusCreated, out, err)
}

func (h *Handler) kvInfo(w http.ResponseWriter, r *http.Request) {
	out, err := h.buckets.KVInfo(r.Context(), r.PathValue("bucket"))
	h.reply(w, http.StatusOK, out, err)
}

func (h *Handler) kvDelete(w http.ResponseWriter, r *http.Request) {
	name := r.PathValue("bucket")
	audit.SetCall(r.Context(), audit.ActionKVDelete, name)
	err := h.buckets.DeleteKV(r.Context(), name)
	h.reply(w, http.StatusOK, map[string]string{"deleted": name}, err)
}

// kvKeys serves GET .../keys?filter=F&limit=N (every key, 1000; the
// backend bounds limit).
func (h *Handler) kvKeys(w http.ResponseWriter, r *http.Request) {
	limit := 1000
	if v := r.URL.Query().Get("limit"); v != "" {
		var err error
		if limit, err = strconv.Atoi(v); err != nil {
			h.writeErr(w, badRequest("limit %q: want a number of keys", v))
			return
		}
	}
	out, err := h.buckets.KVKeys(r.Context(), r.PathValue("bucket"), r.URL.Query().Get("filter"), limit)
	h.reply(w, http.StatusOK, out, err)
}

func (h *Handler) kvGet(w http.ResponseWriter, r *http.Request) {
	out, err := h.buckets.GetKV(r.Context(), r.PathValue("bucket"), r.URL.Query().Get("key"))
	h.reply(w, http.StatusOK, out, err)
}

func (h *Handler) kvPut(w http.ResponseWriter, r *http.Request) {
	var req api.KVPutRequest
	if !decode(w, r, &req) {
		return
	}
	name, key := r.PathValue("bucket"), r.URL.Query().Get("key")
	audit.SetCall(r.Context(), audit.ActionKVPut, name+"/"+key)
	audit.Param(r.Context(), "bytes", len(req.Value))
	out, err := h.buckets.PutKV(r.Context(), name, key, req.Value)
	h.reply(w, http.StatusOK, out, err)
}

func (h *Handler) kvDeleteKey(w http.ResponseWriter, r *http.Request) {
	name, key := r.PathValue("bucket"), r.URL.Query().Get("key")
	purge := r.URL.Query().Get("purge") == "true"
	audit.SetCall(r.Context(), audit.ActionKVDeleteKey, name+"/"+key)
	audit.Param(r.Context(), "purge", purge)
	err := h.buckets.DeleteKVKey(r.Context(), name, key, purge)
	h.reply(w, http.StatusOK, map[string]string{"deleted": key}, err)
}
