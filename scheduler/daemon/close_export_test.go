package daemon

// MarkClosing does what Close does first, and only that: marks the daemon
// closing. The API still serves, as it does while Close stops the
// containers, and what would start a topology gets ErrClosed: a test sees
// that window's answers without racing it.
func (d *Daemon) MarkClosing() {
	d.mu.Lock()
	d.closing = true
	d.mu.Unlock()
}
