package httpapi

import (
	"net/http"
	"strconv"

	"github.com/ardea-dev/ardea/internal/audit"
	"github.com/ardea-dev/ardea/scheduler/api"
)

// The caller's tenant streams (the backend's Streams).
func (h *Handler) streamRoutes(mux *http.ServeMux) {
	mux.HandleFunc("GET /api/v1/streams", h.streamList)
	mux.HandleFunc("POST /api/v1/streams", h.streamCreate)
	mux.HandleFunc("GET /api/v1/streams/{name}", h.streamInfo)
	mux.HandleFunc("DELETE /api/v1/streams/{name}", h.streamDelete)
	mux.HandleFunc("POST /api/v1/streams/{name}/messages", h.streamPublish)
	mux.HandleFunc("GET /api/v1/streams/{name}/messages", h.streamRead)
}

func (h *Handler) streamList(w http.ResponseWriter, r *http.Request) {
	out, err := h.streams.ListStreams(r.Context())
	h.reply(w, http.StatusOK, out, err)
}

func (h *Handler) streamCreate(w http.ResponseWriter, r *http.Request) {
	var req api.CreateStreamRequest
	if !decode(w, r, &req) {
		return
	}
	audit.SetCall(r.Context(), audit.ActionStreamCreate, req.Name)
	audit.Param(r.Context(), "max_bytes", req.MaxBytes)
	out, err := h.streams.CreateStream(r.Context(), req)
	h.reply(w, http.StatusCreated, out, err)
}

func (h *Handler) streamInfo(w http.ResponseWriter, r *http.Request) {
	out, err := h.streams.StreamInfo(r.Context(), r.PathValue("name"))
	h.reply(w, http.StatusOK, out, err)
}

func (h *Handler) streamDelete(w http.ResponseWriter, r *http.Request) {
	name := r.PathValue("name")
	audit.SetCall(r.Context(), audit.ActionStreamDelete, name)
	err := h.streams.DeleteStream(r.Context(), name)
	h.reply(w, http.StatusOK, map[string]string{"deleted": name}, err)
}

func (h *Handler) streamPublish(w http.ResponseWriter, r *http.Request) {
	var req api.PublishRequest
	if !decode(w, r, &req) {
		return
	}
	audit.SetCall(r.Context(), audit.ActionStreamPublish, r.PathValue("name"))
	audit.Param(r.Context(), "messages", len(req.Messages))
	out, err := h.streams.Publish(r.Context(), r.PathValue("name"), req.Messages)
	h.reply(w, http.StatusOK, out, err)
}

// streamRead serves GET .../messages?from=SEQ&limit=N (from 1, 100
// messages; the backend bounds limit).
func (h *Handler) streamRead(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	from, limit := uint64(1), 100
	var err error
	if v := q.Get("from"); v != "" {
		if from, err = strconv.ParseUint(v, 10, 64); err != nil {
			h.writeErr(w, badRequest("from %q: want a sequence number", v))
			return
		}
	}
	if v := q.Get("limit"); v != "" {
		if limit, err = strconv.Atoi(v); err != nil {
			h.writeErr(w, badRequest("limit %q: want a number of messages", v))
			return
		}
	}
	out, err := h.streams.ReadStream(r.Context(), r.PathValue("name"), from, limit)
	h.reply(w, http.StatusOK, out, err)
}
