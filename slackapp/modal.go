package slackapp

import (
	"context"
	"encoding/json"
	"net/http"

	"github.com/slack-go/slack"

	"github.com/ctalk/ctalk"
	"github.com/ctalk/ctalk/usecase"
)

// maxInput is the longest text a Slack modal's input holds; a longer
// draft is edited in ctalk.
const maxInput = 3000

// modals are the decisions taken in a modal: its title, the label of its
// text, whether the text is the draft to edit, and the kind.
var modals = map[string]struct {
	title, label, submit string
	prefill              bool
	kind                 usecase.Kind
}{
	actEdit:    {"Edit and send", "Your answer, sent as you write it", "Send", true, usecase.Edit},
	actReject:  {"Reject the draft", "What your agent should change", "Reject", false, usecase.Reject},
	actAnswer:  {"Answer yourself", "Your answer, sent as you write it", "Send", false, usecase.Answer},
	actDecline: {"Decline", "Why (the asker reads this)", "Decline", false, usecase.Decline},
}

// openModal opens the modal of action on the question msgID, version
// named, with the trigger of the press (valid for 3 seconds).
func (s *Service) openModal(ctx context.Context, p *press, action, msgID string, version int) error {
	m, ok := modals[action]
	if !ok {
		return ctalk.Errorf(ctalk.EInvalid, "unknown button %q", action)
	}
	input := slack.NewPlainTextInputBlockElement(nil, "text")
	input.Multiline, input.MaxLength = true, maxInput
	if m.prefill {
		r, err := s.svc.Inbox.Review(ctx, p.caller, msgID)
		if err != nil {
			return err
		}
		if d := r.Latest(); d != nil {
			input.InitialValue = d.Text
		}
	}
	view := slack.ModalViewRequest{
		Type:            slack.VTModal,
		CallbackID:      action,
		PrivateMetadata: value(msgID, version),
		Title:           plain(m.title),
		Submit:          plain(m.submit),
		Close:           plain("Cancel"),
		Blocks:          slack.Blocks{BlockSet: []slack.Block{slack.NewInputBlock("text", plain(m.label), nil, input)}},
	}
	return s.call(ctx, "opening the form", func() error {
		_, err := s.client(p.app.token).OpenViewContext(ctx, p.cb.TriggerID, view)
		return err
	})
}

func plain(s string) *slack.TextBlockObject {
	return slack.NewTextBlockObject(slack.PlainTextType, s, false, false)
}

// submitted carries out the decision of a submitted modal, or answers
// Slack with the refusal next to its text.
func (s *Service) submitted(ctx context.Context, w http.ResponseWriter, p *press) {
	m, ok := modals[p.cb.View.CallbackID]
	msgID, version, err := parseValue(p.cb.View.PrivateMetadata)
	if !ok && err == nil {
		err = ctalk.Errorf(ctalk.EInvalid, "unknown form %q", p.cb.View.CallbackID)
	}
	if err == nil {
		err = s.mayDecide(ctx, p, msgID)
	}
	if err == nil {
		err = s.decide(ctx, p, usecase.Decision{Kind: m.kind, MessageID: msgID, Version: version, Text: viewText(p.cb.View)})
	}
	if err == nil {
		w.WriteHeader(http.StatusOK)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(map[string]any{"response_action": "errors", "errors": map[string]string{"text": "Nothing was done: " + ctalk.ErrorMessage(err)}})
}

// viewText is what the person typed in a modal.
func viewText(v slack.View) string {
	if v.State == nil {
		return ""
	}
	return v.State.Values["text"]["text"].Value
}
