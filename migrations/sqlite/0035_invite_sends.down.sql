DROP TABLE invite_sends;
