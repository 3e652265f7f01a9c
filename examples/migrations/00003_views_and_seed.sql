-- +goose Up
CREATE VIEW active_users AS
  SELECT u.id, u.email, u.name FROM users u WHERE EXISTS (SELECT 1 FROM posts p WHERE p.user_id = u.id);

CREATE VIEW active_user_emails AS
  SELECT email FROM active_users ORDER BY email;

INSERT INTO users (id, email, name, created_at) VALUES
  (1, 'ada@example.com', 'Ada', '2024-01-01 10:00:00'),
  (2, 'grace@example.com', 'Grace', '2024-01-02 10:00:00'),
  (3, 'linus@example.com', 'Linus', '2024-01-03 10:00:00');
INSERT INTO posts (user_id, title, body) VALUES
  (1, 'Hello World', 'First post'),
  (2, 'Compilers', 'On compilers');
INSERT INTO comments (post_id, user_id, body) VALUES (1, 2, 'Nice'), (2, 1, 'Indeed');
-- A deleted row leaves the AUTO_INCREMENT counter above MAX(id) + 1.
DELETE FROM comments WHERE id = 2;

-- +goose Down
DROP VIEW active_user_emails;
DROP VIEW active_users;
DELETE FROM comments;
DELETE FROM posts;
DELETE FROM users;
