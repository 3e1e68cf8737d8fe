// Package domain is the verification session: its input rules, its lifecycle (created →
// pending → processing → completed | failed; created or pending → expired; anything but
// completed → canceled), its report, its failure and attempt history, and redaction. It
// imports no framework: the use cases (app) drive it and the adapters store it.
//
// Every transition records the event it raises (Raised); the use cases render those events and
// hand them back (Emit) before the session is stored, and the repository refuses to store a
// session with a transition whose event was not emitted, so a state change without its event
// cannot be written.
package domain
