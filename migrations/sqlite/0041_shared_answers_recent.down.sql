DROP INDEX shared_answers_recent;
