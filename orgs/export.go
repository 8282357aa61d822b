package orgs

import (
	"context"
	"database/sql"
	"time"

	"github.com/ctalk/ctalk/db"
)

// ExportedMember is one line of an export's members.jsonl: a member and
// their profile, never their password hash or any credential.
type ExportedMember struct {
	UserID       string     `json:"user_id"`
	Name         string     `json:"name"`
	Role         string     `json:"role"`
	Ownership    []string   `json:"ownership"`
	Notes        string     `json:"notes"`
	ProfileNotes string     `json:"profile_notes"`
	Email        string     `json:"email,omitempty"`
	CreatedAt    time.Time  `json:"created_at"`
	UpdatedAt    time.Time  `json:"updated_at"`
	RemovedAt    *time.Time `json:"removed_at,omitempty"`
	LastSeenAt   *time.Time `json:"last_seen_at,omitempty"`
	AwayUntil    *time.Time `json:"away_until,omitempty"`
	AwayDelegate string     `json:"away_delegate,omitempty"`
	AwayNote     string     `json:"away_note,omitempty"`
}

// ExportMembers calls emit with each member of orgID by id, removed ones
// too, or only with userID when it is not empty, as rows are read.
//
// Returns only the database's errors, or emit's.
func (s *Service) ExportMembers(ctx context.Context, orgID, userID string, emit func(any) error) error {
	return db.Each(ctx, s.db, func(rows *db.Rows) error {
		var m ExportedMember
		var own string
		var email sql.NullString
		var removed, seen, away db.NullTime
		if err := rows.Scan(&m.UserID, &m.Name, &m.Role, &own, &m.Notes, &m.ProfileNotes, &email, &m.CreatedAt, &m.UpdatedAt,
			&removed, &seen, &away, &m.AwayDelegate, &m.AwayNote); err != nil {
			return err
		}
		m.Ownership, m.Email = DecodeOwnership(own), email.String
		m.RemovedAt, m.LastSeenAt, m.AwayUntil = removed.Ptr(), seen.Ptr(), away.Ptr()
		return emit(&m)
	}, `SELECT id, name, role, ownership, notes, profile_notes, email, created_at, updated_at,
		removed_at, last_seen_at, away_until, away_delegate, away_note
		FROM users WHERE org_id = $1 AND ($2 = '' OR id = $2) ORDER BY id`, orgID, userID)
}
