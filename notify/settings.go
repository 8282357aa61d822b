package notify

import (
	"cmp"
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/ctalk/ctalk"
	"github.com/ctalk/ctalk/db"
)

// The channels a notification goes out on. "In the app" is no channel:
// the app shows everything anyway.
const (
	ChannelEmail   = "email"
	ChannelWebhook = "webhook"
)

// channelNames are the channels a person can choose.
var channelNames = []string{ChannelEmail, ChannelWebhook, ChannelPush}

// Settings are a person's notification settings.
type Settings struct {
	// Channels maps each event kind to the channels it goes to; a kind
	// missing takes its default (see DefaultChannels).
	Channels map[Kind][]string `json:"channels" jsonschema:"for each kind of event, the channels it is sent on (email, webhook, push); none means only in the app"`
	Paused   bool              `json:"paused" jsonschema:"true while the person paused every notification"`
	// QuietStart and QuietEnd are "HH:MM" in TimeZone; equal means no quiet
	// hours.
	QuietStart    string `json:"quiet_start" jsonschema:"start of quiet hours, HH:MM in time_zone; equal to quiet_end means none"`
	QuietEnd      string `json:"quiet_end" jsonschema:"end of quiet hours, HH:MM in time_zone"`
	TimeZone      string `json:"time_zone" jsonschema:"IANA time zone of the quiet hours"`
	UrgentInQuiet bool   `json:"urgent_in_quiet" jsonschema:"true when urgent posts are sent during quiet hours"`
	// WorkDays (ISO weekdays, 1 Monday to 7 Sunday) and WorkStart to
	// WorkEnd ("HH:MM" in TimeZone) are the person's working hours, which a
	// reminder's waiting time counts.
	WorkDays   []int  `json:"work_days" jsonschema:"working days as ISO weekdays, 1 Monday to 7 Sunday; reminders count working hours only"`
	WorkStart  string `json:"work_start" jsonschema:"start of the working day, HH:MM in time_zone"`
	WorkEnd    string `json:"work_end" jsonschema:"end of the working day, HH:MM in time_zone"`
	quietStart int
	quietEnd   int
	workStart  int
	workEnd    int
}

// DefaultWorkDays, DefaultWorkStart and DefaultWorkEnd are the default
// working hours: Monday to Friday, 09:00 to 17:00.
var DefaultWorkDays = []int{1, 2, 3, 4, 5}

const (
	DefaultWorkStart = "09:00"
	DefaultWorkEnd   = "17:00"
)

// afterWorking is the time d of working time after from: the hours of
// the person's working days between WorkStart and WorkEnd in their time
// zone, each day's as its own clock reads them (a day that changes to or
// from summer time is as long as its hours say).
func (s Settings) afterWorking(from time.Time, d time.Duration) time.Time {
	if len(s.WorkDays) == 0 || s.workStart >= s.workEnd {
		return from.Add(d)
	}
	loc, err := time.LoadLocation(s.TimeZone)
	if err != nil {
		loc = time.UTC
	}
	t := from.In(loc)
	// 400 weeks bound the walk: the longest reminder (30 days of working
	// time, one hour a week) ends well inside.
	for range 400 * 7 {
		y, m, day := t.Date()
		start := time.Date(y, m, day, s.workStart/60, s.workStart%60, 0, 0, loc)
		end := time.Date(y, m, day, s.workEnd/60, s.workEnd%60, 0, 0, loc)
		if slices.Contains(s.WorkDays, isoWeekday(t)) && t.Before(end) {
			if t.Before(start) {
				t = start
			}
			left := end.Sub(t)
			if d <= left {
				return t.Add(d).UTC()
			}
			d -= left
		}
		t = time.Date(y, m, day+1, 0, 0, 0, 0, loc)
	}
	return from.Add(d)
}

func isoWeekday(t time.Time) int {
	if w := int(t.Weekday()); w != 0 {
		return w
	}
	return 7
}

// parseWorkDays reads "1,2,3" as stored.
func parseWorkDays(v string) []int {
	out := []int{}
	for _, f := range strings.Split(v, ",") {
		if n, err := strconv.Atoi(strings.TrimSpace(f)); err == nil && n >= 1 && n <= 7 {
			out = append(out, n)
		}
	}
	return out
}

// checkWorkingHours validates the working hours of in, filling in the
// defaults of what it leaves out, and returns them as stored.
func checkWorkingHours(in Settings) (days string, start, end int, err error) {
	if in.WorkDays == nil {
		in.WorkDays = DefaultWorkDays
	}
	if len(in.WorkDays) == 0 {
		return "", 0, 0, ctalk.Errorf(ctalk.EInvalid, "choose at least one working day; reminders count waiting time on working days only")
	}
	seen := make([]string, 0, len(in.WorkDays))
	for _, d := range slices.Sorted(slices.Values(in.WorkDays)) {
		if d < 1 || d > 7 {
			return "", 0, 0, ctalk.Errorf(ctalk.EInvalid, "work_days are ISO weekdays, 1 (Monday) to 7 (Sunday); got %d", d)
		}
		if n := strconv.Itoa(d); !slices.Contains(seen, n) {
			seen = append(seen, n)
		}
	}
	if start, err = parseClock("work_start", cmp.Or(strings.TrimSpace(in.WorkStart), DefaultWorkStart)); err != nil {
		return "", 0, 0, err
	}
	if end, err = parseClock("work_end", cmp.Or(strings.TrimSpace(in.WorkEnd), DefaultWorkEnd)); err != nil {
		return "", 0, 0, err
	}
	if end <= start {
		return "", 0, 0, ctalk.Errorf(ctalk.EInvalid, "work_end (%s) must be later than work_start (%s) on the same day", clock(end), clock(start))
	}
	return strings.Join(seen, ","), start, end, nil
}

// DefaultChannels are the channels of a kind nobody chose for: questions,
// approvals and reminders by email, webhook and push (to the webhooks and
// browsers the person added), the rest in the app.
func DefaultChannels(k Kind, email bool) []string {
	switch k {
	case KindQuestion, KindDraft, KindPost, KindReminder, KindWebhookDisabled, KindInfoRequested, KindInfoProvided:
		if email {
			return []string{ChannelEmail, ChannelWebhook, ChannelPush}
		}
		return []string{ChannelWebhook, ChannelPush}
	}
	return nil
}

// channelsFor is where an event of kind k goes; nothing while paused. A
// disabled webhook's notice goes by email, and a security notice by
// webhook and push, whatever the settings say.
func (s Settings) channelsFor(k Kind, email bool) []string {
	if k == KindWebhookDisabled {
		return []string{ChannelEmail}
	}
	if k == KindSecurity {
		// Mailed by the account's own mails (package access), richer.
		return []string{ChannelWebhook, ChannelPush}
	}
	if s.Paused {
		return nil
	}
	if ch, ok := s.Channels[k]; ok {
		return ch
	}
	return DefaultChannels(k, email)
}

// sendAt is when a notification made at now goes out: at the end of quiet
// hours if now falls in them, unless it is urgent and the person lets
// urgent ones through.
func (s Settings) sendAt(now time.Time, urgent bool) time.Time {
	if s.quietStart == s.quietEnd || urgent && s.UrgentInQuiet {
		return now
	}
	loc, err := time.LoadLocation(s.TimeZone)
	if err != nil {
		loc = time.UTC
	}
	local := now.In(loc)
	mins := local.Hour()*60 + local.Minute()
	in := s.quietStart < s.quietEnd && mins >= s.quietStart && mins < s.quietEnd ||
		s.quietStart > s.quietEnd && (mins >= s.quietStart || mins < s.quietEnd)
	if !in {
		return now
	}
	end := time.Date(local.Year(), local.Month(), local.Day(), s.quietEnd/60, s.quietEnd%60, 0, 0, loc)
	if !end.After(local) {
		end = end.AddDate(0, 0, 1)
	}
	return end.UTC()
}

func settingsOf(ctx context.Context, r db.Reader, orgID, userID string) (Settings, error) {
	s := Settings{TimeZone: "UTC", Channels: map[Kind][]string{}, WorkDays: DefaultWorkDays, workStart: 9 * 60, workEnd: 17 * 60}
	var channels, days string
	err := r.QueryRow(ctx, settingsSQL, orgID, userID).Scan(&channels, &s.Paused, &s.quietStart, &s.quietEnd, &s.TimeZone, &s.UrgentInQuiet, &days, &s.workStart, &s.workEnd)
	if errors.Is(err, sql.ErrNoRows) {
		s.QuietStart, s.QuietEnd, s.WorkStart, s.WorkEnd = "00:00", "00:00", DefaultWorkStart, DefaultWorkEnd
		return s, nil
	}
	if err != nil {
		return s, fmt.Errorf("read notification settings: %w", err)
	}
	if err := json.Unmarshal([]byte(channels), &s.Channels); err != nil {
		return s, fmt.Errorf("read notification settings: %w", err)
	}
	s.QuietStart, s.QuietEnd = clock(s.quietStart), clock(s.quietEnd)
	s.WorkDays, s.WorkStart, s.WorkEnd = parseWorkDays(days), clock(s.workStart), clock(s.workEnd)
	return s, nil
}

func clock(mins int) string { return fmt.Sprintf("%02d:%02d", mins/60, mins%60) }

func parseClock(field, v string) (int, error) {
	v = strings.TrimSpace(v)
	if v == "" {
		return 0, nil
	}
	t, err := time.Parse("15:04", v)
	if err != nil {
		return 0, ctalk.Errorf(ctalk.EInvalid, "%s must be a time of day as HH:MM, such as 22:00; got %q", field, ctalk.Shorten(v, 20))
	}
	return t.Hour()*60 + t.Minute(), nil
}

// Settings returns a person's notification settings, with every kind's
// channels filled in (the defaults where they chose none).
//
// Returns only the database's errors.
func (s *Service) Settings(ctx context.Context, c ctalk.Caller) (Settings, error) {
	set, err := settingsOf(ctx, s.db, c.OrgID, c.UserID)
	if err != nil {
		return set, err
	}
	for _, k := range Kinds {
		if _, ok := set.Channels[k]; !ok {
			set.Channels[k] = DefaultChannels(k, s.EmailEnabled())
		}
		if set.Channels[k] == nil {
			set.Channels[k] = []string{}
		}
	}
	return set, nil
}

// SaveSettings replaces a person's notification settings. Kinds missing
// from in.Channels keep their defaults; working hours left out (no days,
// start or end) are kept as they were.
//
// Returns EInvalid for an unknown kind or channel, a bad time or zone, or
// working hours that are none.
func (s *Service) SaveSettings(ctx context.Context, c ctalk.Caller, in Settings) (Settings, error) {
	for k, chs := range in.Channels {
		if !slices.Contains(Kinds, k) {
			return in, ctalk.Errorf(ctalk.EInvalid, "unknown kind of notification %q; the kinds are %s", ctalk.Shorten(string(k), 40), kindList())
		}
		for _, ch := range chs {
			if !slices.Contains(channelNames, ch) {
				return in, ctalk.Errorf(ctalk.EInvalid, "unknown channel %q for %s; the channels are email, webhook and push", ctalk.Shorten(ch, 40), k)
			}
		}
	}
	start, err := parseClock("quiet_start", in.QuietStart)
	if err != nil {
		return in, err
	}
	end, err := parseClock("quiet_end", in.QuietEnd)
	if err != nil {
		return in, err
	}
	tz := strings.TrimSpace(in.TimeZone)
	if tz == "" {
		tz = "UTC"
	}
	if _, err := time.LoadLocation(tz); err != nil {
		return in, ctalk.Errorf(ctalk.EInvalid, "time_zone %q is not a known time zone; use an IANA name such as Europe/Berlin or America/New_York", ctalk.Shorten(tz, 60))
	}
	if in.WorkDays == nil && in.WorkStart == "" && in.WorkEnd == "" {
		// Working hours left out are kept.
		cur, err := settingsOf(ctx, s.db, c.OrgID, c.UserID)
		if err != nil {
			return in, err
		}
		in.WorkDays, in.WorkStart, in.WorkEnd = cur.WorkDays, cur.WorkStart, cur.WorkEnd
	}
	days, workStart, workEnd, err := checkWorkingHours(in)
	if err != nil {
		return in, err
	}
	if in.Channels == nil {
		in.Channels = map[Kind][]string{}
	}
	channels, err := json.Marshal(in.Channels)
	if err != nil {
		return in, err
	}
	err = s.db.Write(ctx, func(q db.Querier) error {
		_, err := q.Exec(ctx, saveSettingsSQL, c.OrgID, c.UserID, string(channels), in.Paused, start, end, tz, in.UrgentInQuiet, s.db.Now(), days, workStart, workEnd)
		return err
	})
	if err != nil {
		return in, fmt.Errorf("save notification settings: %w", err)
	}
	s.reachChanged(ctx, c.OrgID, c.UserID)
	return s.Settings(ctx, c)
}

func kindList() string {
	names := make([]string, len(Kinds))
	for i, k := range Kinds {
		names[i] = string(k)
	}
	return strings.Join(names, ", ")
}

// Text modes: how much of the words a notification carries.
const (
	TextFull      = "full"
	TextFirstLine = "first_line"
	TextNone      = "none"
)

// DefaultReminder is how long a question waits before its recipient is
// reminded, unless the org set another time.
const DefaultReminder = 4 * time.Hour

// OrgSettings are an org's notification settings.
type OrgSettings struct {
	TextMode string        `json:"text_mode" jsonschema:"how much of the words a notification carries: full, first_line or none"`
	Reminder time.Duration `json:"-"`
	// ReminderMinutes is Reminder in minutes; 0 means no reminders.
	ReminderMinutes int `json:"reminder_minutes" jsonschema:"minutes a question waits before its recipient is reminded; 0 for none"`
}

func orgSettings(ctx context.Context, r db.Reader, orgID string) (OrgSettings, error) {
	o := OrgSettings{TextMode: TextFirstLine, Reminder: DefaultReminder}
	var secs int
	err := r.QueryRow(ctx, orgSettingsSQL, orgID).Scan(&o.TextMode, &secs)
	switch {
	case errors.Is(err, sql.ErrNoRows):
	case err != nil:
		return o, fmt.Errorf("read org notification settings: %w", err)
	default:
		o.Reminder = time.Duration(secs) * time.Second
	}
	o.ReminderMinutes = int(o.Reminder / time.Minute)
	return o, nil
}

// OrgSettings returns an org's notification settings.
//
// Returns only the database's errors.
func (s *Service) OrgSettings(ctx context.Context, orgID string) (OrgSettings, error) {
	return orgSettings(ctx, s.db, orgID)
}

// SaveOrgSettings sets an org's notification settings (an admin's call).
//
// Returns EInvalid.
func (s *Service) SaveOrgSettings(ctx context.Context, orgID string, in OrgSettings) (OrgSettings, error) {
	if in.TextMode != TextFull && in.TextMode != TextFirstLine && in.TextMode != TextNone {
		return in, ctalk.Errorf(ctalk.EInvalid, "text_mode must be full, first_line or none; got %q", ctalk.Shorten(in.TextMode, 30))
	}
	if in.ReminderMinutes < 0 || in.ReminderMinutes > 60*24*30 {
		return in, ctalk.Errorf(ctalk.EInvalid, "reminder_minutes must be between 0 (no reminders) and 43200 (30 days); got %d", in.ReminderMinutes)
	}
	err := s.db.Write(ctx, func(q db.Querier) error {
		_, err := q.Exec(ctx, saveOrgSettingsSQL, orgID, in.TextMode, in.ReminderMinutes*60, s.db.Now())
		return err
	})
	if err != nil {
		return in, fmt.Errorf("save org notification settings: %w", err)
	}
	s.reachChanged(ctx, orgID, "")
	return orgSettings(ctx, s.db, orgID)
}

// cut is text as the org's mode lets a notification carry it.
func cut(mode, text string) string {
	switch mode {
	case TextNone:
		return ""
	case TextFull:
		return text
	}
	line, _, _ := strings.Cut(strings.TrimSpace(text), "\n")
	return ctalk.Shorten(strings.TrimSpace(line), 200)
}
