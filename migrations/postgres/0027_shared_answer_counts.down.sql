DROP TABLE shared_answer_counts;
