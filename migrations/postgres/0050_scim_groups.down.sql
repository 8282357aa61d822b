DROP TABLE scim_groups;
