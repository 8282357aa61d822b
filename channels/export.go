package channels

import (
	"context"
	"database/sql"
	"encoding/json"
	"time"

	"github.com/ctalk/ctalk/db"
)

// ExportedChannel is one line of an export's channels.jsonl.
type ExportedChannel struct {
	Name        string     `json:"channel"`
	Private     bool       `json:"private"`
	Topic       string     `json:"topic"`
	Description string     `json:"description"`
	CreatedBy   string     `json:"created_by"`
	CreatedAt   time.Time  `json:"created_at"`
	ArchivedAt  *time.Time `json:"archived_at,omitempty"`
}

// ExportedMember is one line of an export's channel_members.jsonl.
type ExportedMember struct {
	Channel  string    `json:"channel"`
	UserID   string    `json:"user_id"`
	JoinedAt time.Time `json:"joined_at"`
}

// ExportedMessage is one line of an export's channel_messages.jsonl.
type ExportedMessage struct {
	Channel    string     `json:"channel"`
	Seq        int64      `json:"seq"`
	ID         string     `json:"message_id"`
	AuthorID   string     `json:"author_id"`
	ByAgent    bool       `json:"by_agent"`
	Kind       string     `json:"kind"`
	Priority   string     `json:"priority"`
	Body       string     `json:"body"`
	ReplyTo    string     `json:"reply_to,omitempty"`
	Mentions   []string   `json:"mentions"`
	CreatedAt  time.Time  `json:"created_at"`
	ApprovedAt *time.Time `json:"approved_at,omitempty"`
}

// ExportChannels calls emit with each channel of orgID by name, private
// and archived ones too.
//
// Returns only the database's errors, or emit's.
func (s *Service) ExportChannels(ctx context.Context, orgID string, emit func(any) error) error {
	return db.Each(ctx, s.db, func(rows *db.Rows) error {
		var c ExportedChannel
		var archived db.NullTime
		if err := rows.Scan(&c.Name, &c.Private, &c.Topic, &c.Description, &c.CreatedBy, &c.CreatedAt, &archived); err != nil {
			return err
		}
		c.ArchivedAt = archived.Ptr()
		return emit(&c)
	}, `SELECT name, private, topic, description, created_by, created_at, archived_at
		FROM channels WHERE org_id = $1 ORDER BY name`, orgID)
}

// ExportMembers calls emit with each membership of orgID's channels, by
// channel and member; when userID is not empty, only the user's.
//
// Returns only the database's errors, or emit's.
func (s *Service) ExportMembers(ctx context.Context, orgID, userID string, emit func(any) error) error {
	return db.Each(ctx, s.db, func(rows *db.Rows) error {
		var m ExportedMember
		if err := rows.Scan(&m.Channel, &m.UserID, &m.JoinedAt); err != nil {
			return err
		}
		return emit(&m)
	}, `SELECT channel, user_id, joined_at FROM channel_members
		WHERE org_id = $1 AND ($2 = '' OR user_id = $2) ORDER BY channel, user_id`, orgID, userID)
}

// ExportMessages calls emit with each message of orgID's channels, by
// channel and sequence, as rows are read; when userID is not empty, only
// the user's own.
//
// Returns only the database's errors, or emit's.
func (s *Service) ExportMessages(ctx context.Context, orgID, userID string, emit func(any) error) error {
	return db.Each(ctx, s.db, func(rows *db.Rows) error {
		var m ExportedMessage
		var replyTo sql.NullString
		var mentions string
		var approved db.NullTime
		if err := rows.Scan(&m.Channel, &m.Seq, &m.ID, &m.AuthorID, &m.ByAgent, &m.Kind, &m.Priority, &m.Body, &replyTo, &mentions,
			&m.CreatedAt, &approved); err != nil {
			return err
		}
		m.ReplyTo, m.ApprovedAt = replyTo.String, approved.Ptr()
		if json.Unmarshal([]byte(mentions), &m.Mentions) != nil || m.Mentions == nil {
			m.Mentions = []string{}
		}
		return emit(&m)
	}, `SELECT channel, seq, id, author_id, by_agent, kind, priority, body, reply_to, mentions,
		created_at, approved_at FROM channel_messages
		WHERE org_id = $1 AND ($2 = '' OR author_id = $2) ORDER BY channel, seq`, orgID, userID)
}
