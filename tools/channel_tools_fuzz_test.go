package tools

import "maps"

// The channel tools' argument structs, for the decoding and request fuzzers.
func init() {
	maps.Copy(fuzzArgTypes, map[string]func() any{
		"create_channel":    func() any { return new(createChannelArgs) },
		"list_channels":     func() any { return new(listChannelsArgs) },
		"get_channel":       func() any { return new(channelArgs) },
		"join_channel":      func() any { return new(channelArgs) },
		"leave_channel":     func() any { return new(channelArgs) },
		"invite_to_channel": func() any { return new(inviteArgs) },
		"update_channel":    func() any { return new(updateChannelArgs) },
		"archive_channel":   func() any { return new(channelArgs) },
		"post_message":      func() any { return new(postArgs) },
		"get_messages":      func() any { return new(getMessagesArgs) },
		"get_unread":        func() any { return new(unreadArgs) },
		"wait_for_message":  func() any { return new(waitMessageArgs) },
		"search_messages":   func() any { return new(searchArgs) },
	})
}
