package slackapp

import (
	"fmt"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/slack-go/slack"

	"github.com/ctalk/ctalk"
	"github.com/ctalk/ctalk/inbox"
	"github.com/ctalk/ctalk/usecase"
)

// Action ids of the DM's buttons and callback ids of its modals.
const (
	actApprove = "approve"
	actEdit    = "edit"
	actReject  = "reject"
	actAnswer  = "answer"
	actDecline = "decline"
	actOpen    = "open"
)

// maxBlockText is what one Block Kit text holds (3,000 characters), less
// room for the note that the rest is in ctalk.
const maxBlockText = 2900

// card is what a DM about a question shows.
type card struct {
	Review *inbox.Review
	// Open is the URL of the question's page in ctalk.
	Open string
	// Passkey is set when the org asks for a passkey for every approval:
	// the DM then offers "Open in ctalk" alone.
	Passkey bool
}

// fenced is other people's words as a plain_text section: Slack renders no
// formatting, mention or link of it, and hidden characters are made
// visible; too long a text is cut, saying so.
func fenced(text string) *slack.SectionBlock {
	shown, _ := ctalk.Visible(text)
	if utf8.RuneCountInString(shown) > maxBlockText {
		shown = string([]rune(shown)[:maxBlockText]) + "\n[… cut here: open in ctalk for the rest]"
	}
	return slack.NewSectionBlock(slack.NewTextBlockObject(slack.PlainTextType, shown, false, false), nil, nil)
}

func note(text string) *slack.ContextBlock {
	return slack.NewContextBlock("", slack.NewTextBlockObject(slack.MarkdownType, text, false, false))
}

// blocks are the DM of c: who asks, the question fenced, the latest draft
// fenced, and the buttons that decide.
func (c card) blocks() []slack.Block {
	q := c.Review
	bs := []slack.Block{
		slack.NewSectionBlock(slack.NewTextBlockObject(slack.PlainTextType, q.Sender.Name+" asks you, through ctalk:", false, false), nil, nil),
		note("Their words, shown as written; they are not instructions."),
		fenced(q.Text),
	}
	d := q.Latest()
	if d != nil && !d.Rejected {
		bs = append(bs, note(fmt.Sprintf("Your agent's draft answer, version %d:", d.Version)), fenced(d.Text))
	}
	return append(bs, c.actions())
}

// actions are the buttons of c: with no draft to approve, Answer and
// Decline; where the org asks for a passkey, Open in ctalk alone.
func (c card) actions() slack.Block {
	open := slack.NewButtonBlockElement(actOpen, "", slack.NewTextBlockObject(slack.PlainTextType, "Open in ctalk", false, false))
	open.URL = c.Open
	if c.Passkey {
		return slack.NewActionBlock("decide", open)
	}
	q, d := c.Review, c.Review.Latest()
	var els []slack.BlockElement
	if d != nil && !d.Rejected {
		v := value(q.ID, d.Version)
		approve := button(actApprove, "Approve and send", v)
		approve.Style = slack.StylePrimary
		els = append(els, approve)
		if utf8.RuneCountInString(d.Text) <= maxInput {
			els = append(els, button(actEdit, "Edit", v))
		}
		els = append(els, button(actReject, "Reject with a note", v))
	}
	els = append(els, button(actAnswer, "Answer", value(q.ID, 0)), button(actDecline, "Decline", value(q.ID, 0)), open)
	return slack.NewActionBlock("decide", els...)
}

func button(id, label, v string) *slack.ButtonBlockElement {
	return slack.NewButtonBlockElement(id, v, slack.NewTextBlockObject(slack.PlainTextType, label, false, false))
}

// value is a button's value: the question and the draft version decided.
func value(msgID string, version int) string { return msgID + ":" + strconv.Itoa(version) }

// parseValue reads value back; EInvalid when it is not one.
func parseValue(v string) (msgID string, version int, err error) {
	id, ver, ok := strings.Cut(v, ":")
	n, convErr := strconv.Atoi(ver)
	if !ok || convErr != nil || !inbox.IsMessageID(id) {
		return "", 0, ctalk.Errorf(ctalk.EInvalid, "this button names no question")
	}
	return id, n, nil
}

// settled is the DM once its question was decided: the question, what
// was decided, where and when (in the reader's own time zone), and no
// buttons.
func settled(c card, d usecase.Decided) []slack.Block {
	bs := c.blocks()
	bs = bs[:len(bs)-1]
	return append(bs, slack.NewSectionBlock(slack.NewTextBlockObject(slack.MarkdownType, decidedText(d), false, false), nil, nil))
}

// decidedText says what was decided, where and when.
func decidedText(d usecase.Decided) string {
	what := map[usecase.Kind]string{
		usecase.Approve: "Approved and sent", usecase.Edit: "Edited and sent", usecase.Answer: "Answered",
		usecase.Reject: "Draft rejected with a note", usecase.Decline: "Declined", usecase.Send: "Answer sent",
		kindWithdrawn: "Withdrawn by the asker", kindForwarded: "Forwarded to someone else",
	}[d.Kind]
	if what == "" {
		what = "Decided"
	}
	where := map[string]string{"": " in ctalk", Door: " in Slack", usecase.Agent: " by your agent", usecase.Chat: " in the chat client"}[d.Door]
	at := d.At.UTC()
	return fmt.Sprintf("✓ *%s*%s, <!date^%d^{date_short_pretty} at {time}|%s>.", what, where, at.Unix(), at.Format(time.RFC1123))
}
