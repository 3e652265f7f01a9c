-- +goose Up
CREATE TABLE audit_log (
  id BIGINT UNSIGNED NOT NULL AUTO_INCREMENT PRIMARY KEY,
  entity VARCHAR(50) NOT NULL,
  entity_id BIGINT UNSIGNED NOT NULL,
  action VARCHAR(20) NOT NULL
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4;

CREATE TABLE post_counts (
  user_id BIGINT UNSIGNED NOT NULL PRIMARY KEY,
  posts INT NOT NULL DEFAULT 0
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4;

-- +goose StatementBegin
CREATE TRIGGER posts_after_insert AFTER INSERT ON posts FOR EACH ROW
BEGIN
  INSERT INTO audit_log (entity, entity_id, action) VALUES ('post', NEW.id, 'insert');
  INSERT INTO post_counts (user_id, posts) VALUES (NEW.user_id, 1)
    ON DUPLICATE KEY UPDATE posts = posts + 1;
END
-- +goose StatementEnd

-- +goose StatementBegin
CREATE TRIGGER users_before_delete BEFORE DELETE ON users FOR EACH ROW
BEGIN
  CALL log_action('user', OLD.id, 'delete');
END
-- +goose StatementEnd

-- +goose StatementBegin
CREATE PROCEDURE log_action(IN p_entity VARCHAR(50), IN p_id BIGINT UNSIGNED, IN p_action VARCHAR(20))
BEGIN
  INSERT INTO audit_log (entity, entity_id, action) VALUES (p_entity, p_id, p_action);
END
-- +goose StatementEnd

-- +goose StatementBegin
CREATE FUNCTION post_count(p_user BIGINT UNSIGNED) RETURNS INT READS SQL DATA
BEGIN
  RETURN (SELECT COALESCE(MAX(posts), 0) FROM post_counts WHERE user_id = p_user);
END
-- +goose StatementEnd

-- +goose StatementBegin
CREATE EVENT purge_audit ON SCHEDULE EVERY 1 DAY STARTS '2030-01-01 00:00:00'
DO DELETE FROM audit_log WHERE entity = 'tmp'
-- +goose StatementEnd

-- +goose Down
DROP EVENT purge_audit;
DROP FUNCTION post_count;
DROP PROCEDURE log_action;
DROP TRIGGER users_before_delete;
DROP TRIGGER posts_after_insert;
DROP TABLE post_counts;
DROP TABLE audit_log;
