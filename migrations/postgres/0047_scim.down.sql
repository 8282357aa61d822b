DROP TABLE scim_users;
DROP TABLE scim_tokens;
