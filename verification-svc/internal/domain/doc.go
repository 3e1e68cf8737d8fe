// Package domain is the verification session: its input rules, its lifecycle (created →
// pending → processing → completed | failed; created or pending → expired; anything but
// completed → canceled), its report, its failure and attempt history, and redaction. It
// imports no framework: the use cases (app) drive it and the adapters store it.
//
// Every transition raises its event on the session (its embedded events.Recorder), named by
// type and not rendered: the repository renders the events the session raised (through the
// service's events.Emitter) and stores them with the change, in the same write, so a state
// change is never written without its event.
package domain
