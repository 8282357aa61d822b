package mail

import (
	"context"
	"log/slog"
	"strings"
)

// LogURL is the SMTP_URL of the development sender: every mail goes to the
// server's log instead of a mail server, so that a person trying ctalk on
// a laptop sees what would be sent (invites, resets, notifications) and can
// open its links. It is never for production: the log then holds the
// links of invites and password resets, which are secrets.
const LogURL = "log:"

// logs reports whether c is the development sender's configuration.
func (c Config) logs() bool { return strings.EqualFold(strings.TrimSpace(c.URL), LogURL) }

// Logs reports whether c sends mail to the log (SMTP_URL=log:).
func (c Config) Logs() bool { return c.logs() }

// logSender writes each mail to its logger.
type logSender struct{ log *slog.Logger }

// NewLogSender returns the Sender of SMTP_URL=log:, which writes each
// message, its headers and text part, to log at level INFO.
func NewLogSender(log *slog.Logger) Sender {
	if log == nil {
		log = slog.Default()
	}
	return logSender{log}
}

func (s logSender) Send(ctx context.Context, m Message) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	s.log.InfoContext(ctx, "mail (SMTP_URL=log:, development only; nothing was sent)",
		"to", m.To, "subject", m.Subject, "text", m.Text)
	return nil
}
