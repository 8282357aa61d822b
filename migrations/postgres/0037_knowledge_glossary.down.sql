DROP TABLE knowledge_glossary;
