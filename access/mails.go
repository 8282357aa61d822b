package access

var inviteMail = newMail(`Hello {{.Name}},

{{.Inviter}} invites you to {{.Org}} on ctalk, where people and their AI agents ask each other questions.

Choose your password to join, as {{.UserID}} in the organization {{.OrgID}}:

{{.Link}}

The link works once, until {{.Expires}}. If you did not expect this invite, ignore this mail: nothing happens without you.
`, `<!doctype html>
<html><body style="font-family: system-ui, sans-serif; line-height: 1.5">
<p>Hello {{.Name}},</p>
<p>{{.Inviter}} invites you to <strong>{{.Org}}</strong> on ctalk, where people and their AI agents ask each other questions.</p>
<p><a href="{{.Link}}">Choose your password to join</a>, as <strong>{{.UserID}}</strong> in the organization <strong>{{.OrgID}}</strong>.</p>
<p>The link works once, until {{.Expires}}. If you did not expect this invite, ignore this mail: nothing happens without you.</p>
</body></html>
`)

var resetMail = newMail(`Hello {{.Name}},

Someone, probably you, asked to reset the ctalk password of {{.UserID}} in {{.Org}} ({{.OrgID}}).

Choose a new password here:

{{.Link}}

The link works once, for {{.Minutes}} minutes. Using it signs you out everywhere else and ends your agents' tokens. If you did not ask, ignore this mail: your password stays as it is.
`, `<!doctype html>
<html><body style="font-family: system-ui, sans-serif; line-height: 1.5">
<p>Hello {{.Name}},</p>
<p>Someone, probably you, asked to reset the ctalk password of <strong>{{.UserID}}</strong> in <strong>{{.Org}}</strong> ({{.OrgID}}).</p>
<p><a href="{{.Link}}">Choose a new password</a></p>
<p>The link works once, for {{.Minutes}} minutes. Using it signs you out everywhere else and ends your agents' tokens. If you did not ask, ignore this mail: your password stays as it is.</p>
</body></html>
`)

// resetByAdminMail tells a member that an admin reset their password: the
// account is theirs, and they should know if they did not ask for it.
var resetByAdminMail = newMail(`Hello {{.Name}},

{{.Admin}}, an admin of {{.Org}} ({{.OrgID}}), reset the ctalk password of {{.UserID}}. Every browser and agent signed in as you was signed out. Your passkeys are still yours: a reset does not touch them, and where your organization asks for a passkey before an approval, nobody can approve for you without one.

If you did not ask for this, talk to your admins, and sign in with your passkey or use "Forgot password?" on the sign-in page:

{{.Link}}
`, `<!doctype html>
<html><body style="font-family: system-ui, sans-serif; line-height: 1.5">
<p>Hello {{.Name}},</p>
<p>{{.Admin}}, an admin of <strong>{{.Org}}</strong> ({{.OrgID}}), reset the ctalk password of <strong>{{.UserID}}</strong>. Every browser and agent signed in as you was signed out. Your passkeys are still yours: a reset does not touch them, and where your organization asks for a passkey before an approval, nobody can approve for you without one.</p>
<p>If you did not ask for this, talk to your admins, and sign in with your passkey or use "Forgot password?" on <a href="{{.Link}}">the sign-in page</a>.</p>
</body></html>
`)

// passkeyConfirmMail carries the link that confirms a passkey added by
// someone who had none, where the org asks for a passkey before each
// approval: the factor that a password alone does not give.
var passkeyConfirmMail = newMail(`Hello {{.Name}},

A passkey named "{{.Passkey}}" was added to the ctalk account of {{.UserID}} in {{.Org}} ({{.OrgID}}). Your organization asks for a passkey before every approval, so this first passkey works only once you confirm it here:

{{.Link}}

The link works once, for {{.Hours}} hours. If you did not add this passkey, do not open the link: remove the passkey on your profile, change your password, and tell your admins. Whoever added it knows your password (an agent of yours may).
`, `<!doctype html>
<html><body style="font-family: system-ui, sans-serif; line-height: 1.5">
<p>Hello {{.Name}},</p>
<p>A passkey named <strong>{{.Passkey}}</strong> was added to the ctalk account of <strong>{{.UserID}}</strong> in <strong>{{.Org}}</strong> ({{.OrgID}}). Your organization asks for a passkey before every approval, so this first passkey works only once you confirm it.</p>
<p><a href="{{.Link}}">Confirm the passkey</a></p>
<p>The link works once, for {{.Hours}} hours. If you did not add this passkey, do not open the link: remove the passkey on your profile, change your password, and tell your admins. Whoever added it knows your password (an agent of yours may).</p>
</body></html>
`)

// passkeyChangedMail tells a person that a passkey of theirs was added,
// removed, approved by an admin or confirmed by the server's operator, as
// a sign-in from a new device would.
var passkeyChangedMail = newMail(`Hello {{.Name}},

{{if eq .Change "confirmed"}}The operator of this ctalk server confirmed{{else if .Admin}}{{.Admin}}, an admin of {{.Org}} ({{.OrgID}}), approved{{else}}Someone signed in as you {{.Change}}{{end}} the passkey "{{.Passkey}}" of the ctalk account of {{.UserID}}, on {{.When}}.{{if ne .Change "removed"}} It signs in as you and, where your organization asks for one, proves it is you before an approval.{{end}}

If this was you, there is nothing to do. If it was not, remove what you do not know on your profile, change your password, and tell your admins:

{{.Link}}
`, `<!doctype html>
<html><body style="font-family: system-ui, sans-serif; line-height: 1.5">
<p>Hello {{.Name}},</p>
<p>{{if eq .Change "confirmed"}}The operator of this ctalk server confirmed{{else if .Admin}}{{.Admin}}, an admin of <strong>{{.Org}}</strong> ({{.OrgID}}), approved{{else}}Someone signed in as you {{.Change}}{{end}} the passkey <strong>{{.Passkey}}</strong> of the ctalk account of <strong>{{.UserID}}</strong>, on {{.When}}.{{if ne .Change "removed"}} It signs in as you and, where your organization asks for one, proves it is you before an approval.{{end}}</p>
<p>If this was you, there is nothing to do. If it was not, remove what you do not know on <a href="{{.Link}}">your profile</a>, change your password, and tell your admins.</p>
</body></html>
`)

// emailChangedMail goes to the address a change replaced: the one that
// reset links went to until now, which is how the person learns of a
// change they did not make.
var emailChangedMail = newMail(`Hello {{.Name}},

{{if .Admin}}{{.Admin}}, an admin of {{.Org}} ({{.OrgID}}),{{else}}Someone signed in as you{{end}} changed the email address of the ctalk account of {{.UserID}} on {{.When}}: "forgot password" links and notifications no longer come to this address{{if .New}} but go to {{.New}}{{end}}.{{if .Admin}} Your passkeys are still yours: the change does not touch them, and where your organization asks for a passkey before an approval, nobody can approve for you without one.{{end}}

If you did not ask for this, talk to your admins, and sign in to set your address again:

{{.Link}}
`, `<!doctype html>
<html><body style="font-family: system-ui, sans-serif; line-height: 1.5">
<p>Hello {{.Name}},</p>
<p>{{if .Admin}}{{.Admin}}, an admin of <strong>{{.Org}}</strong> ({{.OrgID}}),{{else}}Someone signed in as you{{end}} changed the email address of the ctalk account of <strong>{{.UserID}}</strong> on {{.When}}: "forgot password" links and notifications no longer come to this address{{if .New}} but go to {{.New}}{{end}}.{{if .Admin}} Your passkeys are still yours: the change does not touch them, and where your organization asks for a passkey before an approval, nobody can approve for you without one.{{end}}</p>
<p>If you did not ask for this, talk to your admins, and <a href="{{.Link}}">sign in</a> to set your address again.</p>
</body></html>
`)

// breakGlassMail tells an admin that another admin signed in with the
// break-glass sign-in of an organization that requires single sign-on.
var breakGlassMail = newMail(`Hello {{.Name}},

{{.Admin}} ({{.AdminID}}), an admin of {{.Org}} ({{.OrgID}}), signed in to ctalk on {{.When}} with the break-glass sign-in: their password and a passkey, bypassing your organization's single sign-on. This is for when the identity provider cannot be reached.

If you did not expect it, ask them why, and read the audit log:

{{.Link}}
`, `<!doctype html>
<html><body style="font-family: system-ui, sans-serif; line-height: 1.5">
<p>Hello {{.Name}},</p>
<p><strong>{{.Admin}}</strong> ({{.AdminID}}), an admin of <strong>{{.Org}}</strong> ({{.OrgID}}), signed in to ctalk on {{.When}} with the break-glass sign-in: their password and a passkey, bypassing your organization's single sign-on. This is for when the identity provider cannot be reached.</p>
<p>If you did not expect it, ask them why, and read <a href="{{.Link}}">the audit log</a>.</p>
</body></html>
`)
